// A fake OpenAI chat completions API on 127.0.0.1 that answers from a
// script.

package main

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
)

// reply is one scripted answer of the fake OpenAI server.
type reply struct {
	status int
	header map[string]string
	body   string
}

// arrival is one request as the fake server saw it.
type arrival struct {
	at         time.Time
	retryCount string // the SDK's X-Stainless-Retry-Count header
}

// fakeOpenAI is a loopback server that answers POST /v1/chat/completions
// from a script, one reply per request, repeating the last one when the
// script runs out. It records when each request arrived.
type fakeOpenAI struct {
	sdkdemo.Fake[arrival]
	script []reply
}

// newFakeOpenAI starts a fake server on 127.0.0.1 that answers with script.
func newFakeOpenAI(script ...reply) *fakeOpenAI {
	f := &fakeOpenAI{script: script}
	f.Serve(sdkdemo.Route(http.MethodPost, "/v1/chat/completions", f.serve))
	return f
}

// URL is the base URL to give the SDK.
func (f *fakeOpenAI) URL() string { return f.Fake.URL() + "/v1/" }

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	n := f.Arrive(arrival{at: time.Now(), retryCount: r.Header.Get("X-Stainless-Retry-Count")})
	rep := sdkdemo.Pick(f.script, n, reply{status: http.StatusInternalServerError, body: `{"error":{"message":"empty script"}}`})

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", "req_fake"+strconv.Itoa(n))
	sdkdemo.Answer(w, rep.status, rep.header, rep.body)
}

// completion is a 200 with one choice, and the quota headers OpenAI sends
// on every response.
func completion(text string) reply {
	return reply{
		status: http.StatusOK,
		header: map[string]string{
			"x-ratelimit-limit-requests":     "3",
			"x-ratelimit-remaining-requests": "2",
			"x-ratelimit-reset-requests":     "20s",
			"x-ratelimit-limit-tokens":       "40000",
			"x-ratelimit-remaining-tokens":   "39980",
			"x-ratelimit-reset-tokens":       "30ms",
		},
		body: fmt.Sprintf(`{"id":"chatcmpl-fake","object":"chat.completion","created":1767225600,"model":"gpt-4o-mini",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":%q,"refusal":null},"logprobs":null,"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`, text),
	}
}

// rateLimited is OpenAI's 429 for a request-rate limit: retry-after-ms
// says how long to wait, and the x-ratelimit-* headers say which quota ran
// out and when it resets (as a Go-style duration). Waits of a second or
// more also carry retry-after in whole seconds, as OpenAI sends it.
func rateLimited(wait time.Duration) reply {
	h := map[string]string{
		"retry-after-ms":                 strconv.FormatInt(wait.Milliseconds(), 10),
		"x-ratelimit-limit-requests":     "3",
		"x-ratelimit-remaining-requests": "0",
		"x-ratelimit-reset-requests":     wait.String(),
		"x-ratelimit-limit-tokens":       "40000",
		"x-ratelimit-remaining-tokens":   "39990",
		"x-ratelimit-reset-tokens":       "15ms",
	}
	if wait >= time.Second {
		h["retry-after"] = strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10)
	}
	return reply{
		status: http.StatusTooManyRequests,
		header: h,
		body: fmt.Sprintf(`{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-fake on requests per min (RPM): `+
			`Limit 3, Used 3, Requested 1. Please try again in %s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, wait),
	}
}

// insufficientQuota is OpenAI's 429 for an account out of credit: no wait
// fixes it, and it carries no retry-after.
func insufficientQuota() reply {
	return reply{
		status: http.StatusTooManyRequests,
		body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.",` +
			`"type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
	}
}
