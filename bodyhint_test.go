package heed_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// googleBody is a Google error body (ai.google.dev, rate limits; Google
// Cloud APIs, errors): a RetryInfo with delay, a QuotaFailure naming
// quotaID, each left out when empty.
func googleBody(delay, quotaID string) string {
	var details []string
	if quotaID != "" {
		details = append(details, `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"`+quotaID+`"}]}`)
	}
	details = append(details, `{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}`)
	if delay != "" {
		details = append(details, `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"`+delay+`"}`)
	}
	return `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[` + strings.Join(details, ",") + `]}}`
}

// geminiTwoViolations is a Gemini 429 on both its per-minute and per-day
// quotas, with pad bytes of a message after them.
func geminiTwoViolations(pad int) string {
	return `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[` +
		`{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},` +
		`{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43s"},` +
		`{"@type":"type.googleapis.com/google.rpc.LocalizedMessage","locale":"en-US","message":"` + strings.Repeat("x", pad) + `"}]}}`
}

func TestDefaultClassifierBodyWaits(t *testing.T) {
	const perMinute, perDay = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	json := hdr("Content-Type", ctJSON)
	tests := []struct {
		name   string
		header http.Header
		body   string
		want   heed.Verdict
	}{
		{"Gemini RetryInfo", json, googleBody("26s", perMinute), heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 26 * time.Second, Source: "RetryInfo"}},
		{"Gemini RetryInfo, nanoseconds", json, googleBody("45.837906927s", perMinute), heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 45837906927 * time.Nanosecond, Source: "RetryInfo"}},
		{"Gemini RetryInfo, tenths", json, googleBody("0.5s", ""), heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 500 * time.Millisecond, Source: "RetryInfo"}},
		{"Gemini per-day quota: no short wait cures it", json, googleBody("40s", perDay), heed.Verdict{Class: heed.Terminal, Reason: "quota", Wait: 40 * time.Second, Source: "RetryInfo"}},
		{"per-day after a per-minute violation", json, geminiTwoViolations(10), heed.Verdict{Class: heed.Terminal, Reason: "quota", Wait: 43 * time.Second, Source: "RetryInfo"}},
		{"per-day after a per-minute violation, cut short", json, geminiTwoViolations(5000), heed.Verdict{Class: heed.Terminal, Reason: "quota", Wait: 43 * time.Second, Source: "RetryInfo"}},
		{"Google ErrorInfo per-day limit", json, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","metadata":{"quota_limit":"Gemini25ProRequestsPerDay"}}]}}`, heed.Verdict{Class: heed.Terminal, Reason: "quota"}},
		{"Google ErrorInfo per-minute limit", json, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","metadata":{"quota_limit":"DefaultRequestsPerMinutePerProject"}}]}}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"Vertex AI: the error in an array", json, "[" + googleBody("3s", perMinute) + "]", heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 3 * time.Second, Source: "RetryInfo"}},
		{"cut short: read as text", json, googleBody("12s", perMinute)[:len(googleBody("12s", perMinute))-4], heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 12 * time.Second, Source: "RetryInfo"}},
		{"per-day quota cut short", json, googleBody("", perDay)[:strings.Index(googleBody("", perDay), "Help")], heed.Verdict{Class: heed.Terminal, Reason: "quota"}},
		{"RetryInfo without a delay", json, googleBody("", ""), heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"RetryInfo negative", json, googleBody("-3s", ""), heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"RetryInfo without its unit", json, googleBody("26", ""), heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"RetryInfo with ten decimals", json, googleBody("1.0000000001s", ""), heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"RetryInfo beyond a Duration", json, googleBody("9999999999999s", ""), heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"Discord retry_after", json, `{"message":"You are being rate limited.","retry_after":64.57,"global":false}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 64570 * time.Millisecond, Source: "retry_after"}},
		{"Discord global", json, `{"message":"You are being rate limited.","retry_after":1.5,"global":true}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 1500 * time.Millisecond, Source: "retry_after"}},
		{"retry_after as a string", json, `{"retry_after":"2"}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"retry_after negative", json, `{"retry_after":-2}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"retry_after huge", json, `{"retry_after":1e300}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"retry_after cut short", json, `{"message":"You are being rate limited.","retry_after":2.25,"glo`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 2250 * time.Millisecond, Source: "retry_after"}},
		{"retry_after whose digits may go on", json, `{"retry_after":2.2`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"insufficient_quota still billing", json, `{"error":{"code":"insufficient_quota"},"retry_after":3}`, heed.Verdict{Class: heed.Terminal, Reason: "billing"}},
		{"HTML body: not read", hdr("Content-Type", "text/html"), `{"retry_after":3}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkClassified(t, heed.DefaultClassifier, 429, tt.header, tt.body, tt.want)
		})
	}
}

func TestDefaultClassifierAWSThrottles(t *testing.T) {
	const amzJSON = "application/x-amz-json-1.0"
	throttled := heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}
	terminal := heed.Verdict{Class: heed.Terminal, Reason: "client error"}
	tests := []struct {
		name   string
		header http.Header
		body   string
		want   heed.Verdict
	}{
		{"DynamoDB __type with a namespace", hdr("Content-Type", amzJSON), `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`, throttled},
		{"JSON ThrottlingException", hdr("Content-Type", "application/x-amz-json-1.1"), `{"__type":"ThrottlingException","message":"Rate exceeded"}`, throttled},
		{"REST-JSON code", hdr("Content-Type", "application/json"), `{"code":"TooManyRequestsException","message":"Rate exceeded"}`, throttled},
		{"REST-JSON Code", hdr("Content-Type", "application/json"), `{"Code":"LimitExceededException"}`, throttled},
		{"x-amzn-ErrorType with a suffix", hdr("X-Amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/", "Content-Type", "application/json"), `{"message":"Rate exceeded"}`, throttled},
		{"x-amzn-ErrorType wins over the body", hdr("X-Amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.coral.validate/", "Content-Type", "application/json"), `{"__type":"ThrottlingException"}`, terminal},
		{"query protocol XML", hdr("Content-Type", "text/xml"), `<?xml version="1.0" encoding="UTF-8"?><ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>b1f7a0b2</RequestId></ErrorResponse>`, throttled},
		{"EC2 XML", hdr("Content-Type", "text/xml;charset=UTF-8"), `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>d5b5b6c1</RequestID></Response>`, throttled},
		{"JSON cut short", hdr("Content-Type", amzJSON), `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"` + strings.Repeat("x", 5000), throttled},
		{"ValidationException stays terminal", hdr("Content-Type", amzJSON), `{"__type":"com.amazon.coral.validate#ValidationException","message":"1 validation error detected"}`, terminal},
		{"XML validation stays terminal", hdr("Content-Type", "text/xml"), `<ErrorResponse><Error><Code>InvalidParameterValue</Code></Error></ErrorResponse>`, terminal},
		{"a numeric code", hdr("Content-Type", "application/json"), `{"code":400,"message":"Throttling"}`, terminal},
		{"text/plain is not read", hdr("Content-Type", "text/plain"), `ThrottlingException`, terminal},
		{"no content type", nil, `{"__type":"ThrottlingException"}`, terminal},
		{"a code that only contains a throttle's name", hdr("Content-Type", "application/json"), `{"code":"NotThrottlingException"}`, terminal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkClassified(t, heed.DefaultClassifier, 400, tt.header, tt.body, tt.want)
		})
	}
}

// TestBodyWaitIsAHint: a wait from a body, or from a Classifier of the
// user's, is honoured as a header's is: the retry goes exactly then and not
// before, raised to MinWait, the longer of it and a header's wins, the
// scope is held for other requests, and a wait that does not fit defers.
func TestBodyWaitIsAHint(t *testing.T) {
	gemini := reply{status: 429, header: hdr("Content-Type", ctJSON), body: googleBody("26s", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier")}
	custom := func(wait time.Duration) heed.Classifier {
		return func(req *http.Request, resp *http.Response, err error) heed.Verdict {
			v := heed.DefaultClassifier(req, resp, err)
			if resp != nil && resp.Header.Get("X-Vendor-Wait") != "" {
				v.Wait, v.Source = wait, "X-Vendor-Wait"
			}
			return v
		}
	}
	vendor := func(h ...string) reply {
		return reply{status: 429, header: hdr(append([]string{"X-Vendor-Wait", "yes"}, h...)...)}
	}
	tests := []struct {
		name   string
		policy heed.Policy
		first  reply
		wait   time.Duration // between the two sends
		source string
		holds  bool // the wait holds the scope: a hint's does, a backoff's not
	}{
		{"Gemini RetryInfo", heed.Policy{}, gemini, 26 * time.Second, "RetryInfo", true},
		{"Gemini, MinWait lower", heed.Policy{MinWait: 10 * time.Millisecond}, gemini, 26 * time.Second, "RetryInfo", true},
		{"Discord", heed.Policy{}, reply{status: 429, header: hdr("Content-Type", ctJSON), body: `{"retry_after":2.5,"global":false}`}, 2500 * time.Millisecond, "retry_after", true},
		{"Discord, a longer Retry-After wins", heed.Policy{}, reply{status: 429, header: hdr("Content-Type", ctJSON, "Retry-After", "3"), body: `{"retry_after":2.5}`}, 3 * time.Second, "Retry-After", true},
		{"GitHub secondary limit without retry-after", heed.Policy{}, reply{status: 403, header: hdr("Content-Type", ctJSON), body: `{"message":"You have exceeded a secondary rate limit."}`}, time.Minute, "GitHub secondary limit", true},
		{"a classifier's wait", heed.Policy{Classify: custom(7 * time.Second)}, vendor(), 7 * time.Second, "X-Vendor-Wait", true},
		{"a classifier's wait raised to MinWait", heed.Policy{Classify: custom(200 * time.Millisecond)}, vendor(), time.Second, "X-Vendor-Wait", true},
		{"a classifier's zero wait raised to MinWait", heed.Policy{Classify: custom(0), MinWait: 2 * time.Second}, vendor(), 2 * time.Second, "X-Vendor-Wait", true},
		{"a classifier's longer wait wins over a header", heed.Policy{Classify: custom(9 * time.Second)}, vendor("Retry-After", "4"), 9 * time.Second, "X-Vendor-Wait", true},
		{"a header's longer wait wins over a classifier's", heed.Policy{Classify: custom(2 * time.Second)}, vendor("Retry-After", "4"), 4 * time.Second, "Retry-After", true},
		{"a classifier's negative wait is none", heed.Policy{Classify: custom(-time.Second), Backoff: heed.Constant(5 * time.Second)}, vendor(), 5 * time.Second, "backoff", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tt.first, ok200)
				var events []heed.Event
				tr := heed.New(rt, heed.WithPolicy(tt.policy), heed.WithObserver(func(e heed.Event) {
					if e.Kind == heed.EventRetry {
						events = append(events, e)
					}
				}))
				// A second request of the scope, sent while the first waits,
				// waits for the same instant: the wait holds the scope.
				start := time.Now()
				done := make(chan time.Time, 1)
				if !tt.holds {
					done <- start.Add(tt.wait)
				}
				go func() {
					if !tt.holds {
						return
					}
					time.Sleep(tt.wait / 2)
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/other", nil))
					if assert.NoError(t, err) {
						_ = resp.Body.Close()
					}
					done <- time.Now()
				}()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/x", nil))
				require.NoError(t, err)
				require.Equal(t, 200, resp.StatusCode)
				_ = resp.Body.Close()
				other := <-done
				sends := rt.requests()
				require.Len(t, sends, map[bool]int{true: 3, false: 2}[tt.holds])
				assert.Equal(t, tt.wait, sends[1].at.Sub(sends[0].at), "the retry goes when the server said")
				assert.False(t, other.Before(start.Add(tt.wait)), "the other request waited for the scope")
				require.Len(t, events, 1)
				assert.Equal(t, tt.source, events[0].Source)
				assert.Equal(t, tt.wait, events[0].Wait)
			})
		})
	}
}

// TestShouldRetryKeepsABodysWait: a server that says "should retry: true"
// of a response DefaultClassifier would not retry makes it Transient, and
// the wait its body gave is still the wait.
func TestShouldRetryKeepsABodysWait(t *testing.T) {
	for _, h := range []string{"X-Should-Retry", "Stripe-Should-Retry"} {
		t.Run(h, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(reply{status: 429, header: hdr("Content-Type", ctJSON, h, "true"), body: geminiTwoViolations(10)}, ok200)
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{Backoff: heed.Constant(time.Second)}))
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://generativelanguage.googleapis.com/v1beta/models", nil))
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				g := rt.gaps()
				require.Len(t, g, 1)
				assert.Equal(t, 43*time.Second, g[0], "the body's wait, not the backoff")
			})
		})
	}
}

func TestBodyWaitThatDoesNotFitDefers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(reply{status: 429, header: hdr("Content-Type", ctJSON), body: googleBody("45.5s", "")})
		tr := heed.New(rt)
		ctx := withDeadline(t, t.Context(), 10*time.Second)
		start := time.Now()
		_, err := tr.RoundTrip(newRequest(t, ctx, "POST", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent", nil))
		var de *heed.DeferredError
		require.True(t, errors.As(err, &de), "%v", err)
		assert.Equal(t, 45500*time.Millisecond, de.Wait)
		assert.True(t, de.RetryAt.Equal(start.Add(45500*time.Millisecond)), "RetryAt %s", de.RetryAt.Sub(start))
		assert.Equal(t, 1, de.Attempts)
		assert.Equal(t, start, time.Now(), "deferred at once, not slept")
		assert.Len(t, rt.requests(), 1)
	})
}
