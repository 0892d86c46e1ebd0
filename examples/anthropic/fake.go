// A fake Anthropic Messages API on 127.0.0.1 that answers from a script.
//
// It answers as Anthropic documents its API:
//   - docs.anthropic.com/en/api/rate-limits: a 429 rate_limit_error carries
//     retry-after (seconds to wait; "earlier retries will fail") and the
//     anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
//     {limit,remaining,reset} headers, resets as RFC 3339 times; every
//     response carries the anthropic-ratelimit-* headers.
//   - docs.anthropic.com/en/api/errors: errors are
//     {"type":"error","error":{"type":...,"message":...}} with a request-id
//     header; 429 is rate_limit_error, 529 is overloaded_error ("the API is
//     temporarily overloaded").

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
)

// reply is one scripted answer. header is called when the request arrives,
// so that resets are absolute times counted from then.
type reply struct {
	status int
	header func(now time.Time) map[string]string
	body   string
}

// arrival is one request as the fake saw it.
type arrival struct {
	at         time.Time
	retryCount string // the SDK's X-Stainless-Retry-Count header
}

// fakeAnthropic answers POST /v1/messages from a script, one reply per
// request, repeating the last reply when the script runs out.
type fakeAnthropic struct {
	sdkdemo.Fake[arrival]
	script []reply
}

// newFakeAnthropic starts a fake on 127.0.0.1 that answers with script.
func newFakeAnthropic(script ...reply) *fakeAnthropic {
	f := &fakeAnthropic{script: script}
	f.Serve(sdkdemo.Route(http.MethodPost, "/v1/messages", f.serve))
	return f
}

// URL is the base URL to give the SDK.
func (f *fakeAnthropic) URL() string { return f.Fake.URL() + "/" }

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "" || r.Header.Get("Anthropic-Version") == "" {
		writeError(w, http.StatusUnauthorized, "authentication_error", "an x-api-key or Authorization header is required")
		return
	}
	now := time.Now()
	n := f.Arrive(arrival{at: now, retryCount: r.Header.Get("X-Stainless-Retry-Count")})
	rep := sdkdemo.Pick(f.script, n, reply{status: http.StatusInternalServerError, body: `{"type":"error","error":{"type":"api_error","message":"empty script"}}`})

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fake"+strconv.Itoa(n))
	var header map[string]string
	if rep.header != nil {
		header = rep.header(now)
	}
	sdkdemo.Answer(w, rep.status, header, rep.body)
}

// writeError answers with an Anthropic error of type typ.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, errorBody(typ, msg))
}

// errorBody is Anthropic's error shape.
func errorBody(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	return string(b)
}

// limits are the anthropic-ratelimit-* headers with the requests dimension
// at remaining, resetting at reset; the token dimensions have room left.
func limits(now time.Time, remaining int, reset time.Time) map[string]string {
	soon := now.Add(time.Second).UTC().Format(time.RFC3339)
	return map[string]string{
		"anthropic-ratelimit-requests-limit":          "50",
		"anthropic-ratelimit-requests-remaining":      strconv.Itoa(remaining),
		"anthropic-ratelimit-requests-reset":          reset.UTC().Format(time.RFC3339),
		"anthropic-ratelimit-tokens-limit":            "90000",
		"anthropic-ratelimit-tokens-remaining":        "89000",
		"anthropic-ratelimit-tokens-reset":            soon,
		"anthropic-ratelimit-input-tokens-limit":      "50000",
		"anthropic-ratelimit-input-tokens-remaining":  "49500",
		"anthropic-ratelimit-input-tokens-reset":      soon,
		"anthropic-ratelimit-output-tokens-limit":     "40000",
		"anthropic-ratelimit-output-tokens-remaining": "39500",
		"anthropic-ratelimit-output-tokens-reset":     soon,
	}
}

// message is a 200 with one text block.
func message(text string) reply {
	body, _ := json.Marshal(map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
		"content":     []map[string]string{{"type": "text", "text": text}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 12, "output_tokens": 6},
	})
	return reply{
		status: http.StatusOK,
		header: func(now time.Time) map[string]string { return limits(now, 49, now.Add(time.Second)) },
		body:   string(body),
	}
}

// rateLimited is the 429 for a spent requests-per-minute limit: retry-after
// in whole seconds, and the requests dimension at 0 until its reset, which
// (in whole seconds, rounded down) is no later than retry-after.
func rateLimited(wait time.Duration) reply {
	secs := int64((wait + time.Second - 1) / time.Second)
	return reply{
		status: http.StatusTooManyRequests,
		header: func(now time.Time) map[string]string {
			h := limits(now, 0, now.Add(time.Duration(secs)*time.Second).Truncate(time.Second))
			h["retry-after"] = strconv.FormatInt(secs, 10)
			return h
		},
		body: errorBody("rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute. "+
			"For details, refer to: https://docs.claude.com/en/api/rate-limits."),
	}
}

// overloaded is the 529 overloaded_error: no hint, try again shortly.
func overloaded() reply {
	return reply{status: 529, body: errorBody("overloaded_error", "Overloaded")}
}
