package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// fakeAPI is a vendor API that throttles: each path plays one scenario.
//
//	GET  /v1/models              1st of every 3: 429, retry-after-ms: 200;
//	                             2nd: 200 that spends the published quota
//	                             (x-ratelimit-remaining-requests: 0, reset in 1s);
//	                             3rd: 200
//	POST /v1/images/generations  429, Retry-After: 120
//	POST /v1/chat/completions    429, insufficient_quota (OpenAI's "out of credit")
type fakeAPI struct {
	models atomic.Int64
}

// newFakeServer starts a fakeAPI on 127.0.0.1.
func newFakeServer() *httptest.Server {
	return httptest.NewServer(new(fakeAPI).handler())
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", f.listModels)
	mux.HandleFunc("POST /v1/images/generations", f.generateImage)
	mux.HandleFunc("POST /v1/chat/completions", f.chat)
	return mux
}

func (f *fakeAPI) listModels(w http.ResponseWriter, _ *http.Request) {
	switch f.models.Add(1) % 3 {
	case 1:
		w.Header().Set("retry-after-ms", "200")
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached for requests.")
	case 2:
		w.Header().Set("x-ratelimit-remaining-requests", "0")
		w.Header().Set("x-ratelimit-reset-requests", "1s")
		writeJSON(w, http.StatusOK, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"}]}`)
	default:
		w.Header().Set("x-ratelimit-remaining-requests", "99")
		w.Header().Set("x-ratelimit-reset-requests", "1s")
		writeJSON(w, http.StatusOK, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"}]}`)
	}
}

func (f *fakeAPI) generateImage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Retry-After", "120")
	writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached for images per minute.")
}

func (f *fakeAPI) chat(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusTooManyRequests, "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.")
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, message, code, code))
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
