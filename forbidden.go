// Refusals on a 403: which are rate limits (GitHub's primary and secondary
// limits, Salesforce's concurrent-request limit) and which no short wait
// cures (Salesforce's 24-hour total, any other 403).

package heed

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// githubSecondaryWait is the least wait after GitHub's secondary rate limit
// when it gives no retry-after and requests remain: "wait for at least one
// minute before retrying" (docs.github.com, rate limits for the REST API).
const githubSecondaryWait = time.Minute

// sourceGitHubSecondary names githubSecondaryWait as a wait's source.
const sourceGitHubSecondary = "GitHub secondary limit"

// classify403 tells a rate limit from a refusal: GitHub answers its primary
// limit with X-RateLimit-Remaining: 0, and its secondary limit with
// Retry-After or a message saying so, which without either header waits
// githubSecondaryWait; Salesforce says REQUEST_LIMIT_EXCEEDED.
func classify403(resp *http.Response) Verdict {
	h := resp.Header
	if len(h["Retry-After"]) > 0 || githubExhausted(h) {
		return Verdict{Class: Throttled, Reason: "rate limited"}
	}
	if b, ok := peekJSONBody(resp); ok {
		if githubSecondary(b) {
			return Verdict{Class: Throttled, Reason: "rate limited", Wait: githubSecondaryWait, Source: sourceGitHubSecondary}
		}
		if v, ok := salesforceLimit(b); ok {
			return v
		}
	}
	return Verdict{Class: Terminal, Reason: "forbidden"}
}

// githubExhausted reports whether X-RateLimit-Remaining is 0, as Hint
// reads it before it takes X-RateLimit-Reset for the wait.
func githubExhausted(h http.Header) bool {
	rem, state := remainingField(h, hdrXRemaining)
	return state == remainingValid && rem == 0
}

// githubSecondary reports whether a JSON body is GitHub's secondary rate
// limit ("abuse detection", its older name).
func githubSecondary(b []byte) bool {
	return bytes.Contains(b, []byte("secondary rate limit")) || bytes.Contains(b, []byte("abuse detection"))
}

// salesforceLimit reads Salesforce's REQUEST_LIMIT_EXCEEDED (a 403 whose
// JSON body is a list of errors with an errorCode): a concurrent-request
// limit ("ConcurrentPerOrgLongTxn Limit exceeded") is Throttled, the
// org's 24-hour total ("TotalRequests Limit exceeded") is Terminal: no short
// wait cures it.
func salesforceLimit(b []byte) (Verdict, bool) {
	if !bytes.Contains(b, []byte("REQUEST_LIMIT_EXCEEDED")) {
		return Verdict{}, false
	}
	var errs []struct {
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(b, &errs) != nil {
		return salesforceVerdict(bytes.Contains(b, []byte("Concurrent"))), true // cut short
	}
	for _, e := range errs {
		if e.ErrorCode == "REQUEST_LIMIT_EXCEEDED" {
			return salesforceVerdict(strings.Contains(e.Message, "Concurrent")), true
		}
	}
	return Verdict{}, false
}

// salesforceVerdict is REQUEST_LIMIT_EXCEEDED's verdict: Throttled for a
// concurrent-request limit, Terminal for the 24-hour total.
func salesforceVerdict(concurrent bool) Verdict {
	if concurrent {
		return Verdict{Class: Throttled, Reason: "rate limited"}
	}
	return Verdict{Class: Terminal, Reason: "quota"}
}
