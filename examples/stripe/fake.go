// A fake Stripe API on 127.0.0.1: POST /v1/customers from a script, with
// Stripe's idempotency layer in front of it.
//
// It answers as Stripe documents its API:
//   - docs.stripe.com/idempotency: the status and body of the first request
//     with a key are saved once the endpoint begins executing, success or
//     500 alike, and every later request with that key gets them again
//     (with Idempotent-Replayed: true); a request refused before executing
//     (a rate limit, a lock conflict) saves nothing; reusing a key with
//     other parameters is an idempotency_error.
//   - docs.stripe.com/error-low-level: Stripe-Should-Retry: true says a
//     retry can succeed (a lock timeout), false that it cannot (the result
//     is saved, a retry would replay it).
//   - docs.stripe.com/rate-limits: a 429 (code rate_limit) carries no
//     wait; clients back off exponentially. A lock_timeout
//     (docs.stripe.com/error-codes) is sent on a 429 or a 409 here.
//   - errors are {"error":{"type":...,"code":...,"message":...}} with a
//     Request-Id header; the Idempotency-Key is echoed on every response.

package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
)

// step is one scripted behaviour of the fake, for a request not replayed.
type step struct {
	status int
	header map[string]string
	body   string
	create bool // the customer is created (the endpoint began executing)
	save   bool // the result is saved under the request's key
	lost   bool // the connection is closed instead of answering
}

// arrival is one request as the fake saw it.
type arrival struct {
	at       time.Time
	key      string // the Idempotency-Key header
	replayed bool   // answered from the idempotency layer
}

// saved is a result kept under an idempotency key.
type saved struct {
	params string
	status int
	body   string
}

// fakeStripe answers POST /v1/customers. A request whose key has a saved
// result gets it again; any other takes the next step of the script,
// repeating the last when the script runs out.
type fakeStripe struct {
	sdkdemo.Fake[arrival]
	script []step

	mu        sync.Mutex
	steps     int
	results   map[string]saved
	customers int
}

// newFakeStripe starts a fake on 127.0.0.1 that answers with script.
func newFakeStripe(script ...step) *fakeStripe {
	f := &fakeStripe{script: script, results: make(map[string]saved)}
	f.Serve(sdkdemo.Route(http.MethodPost, "/v1/customers", f.serve))
	return f
}

// Customers returns how many customers were created.
func (f *fakeStripe) Customers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.customers
}

func (f *fakeStripe) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		answer(w, "", http.StatusUnauthorized, nil, errorBody("invalid_request_error", "", "You did not provide an API key."))
		return
	}
	if err := r.ParseForm(); err != nil {
		answer(w, "", http.StatusBadRequest, nil, errorBody("invalid_request_error", "", "Invalid request body."))
		return
	}
	params := r.PostForm.Encode()
	key := r.Header.Get("Idempotency-Key")

	f.mu.Lock()
	if prev, ok := f.results[key]; ok && key != "" {
		f.Arrive(arrival{at: time.Now(), key: key, replayed: true})
		f.mu.Unlock()
		if prev.params != params {
			answer(w, key, http.StatusBadRequest, nil, errorBody("idempotency_error", "",
				"Keys for idempotent requests can only be used with the same parameters they were first used with."))
			return
		}
		answer(w, key, prev.status, map[string]string{"Idempotent-Replayed": "true"}, prev.body)
		return
	}
	f.Arrive(arrival{at: time.Now(), key: key})
	f.steps++
	st := sdkdemo.Pick(f.script, f.steps, step{status: http.StatusInternalServerError, body: errorBody("api_error", "", "empty script")})
	body := st.body
	if st.create {
		f.customers++
		body = customerBody(f.customers, r.PostForm.Get("email"))
	}
	if st.save && key != "" {
		f.results[key] = saved{params: params, status: st.status, body: body}
	}
	f.mu.Unlock()

	if st.lost {
		// Applied and saved, but the answer never leaves: the client sees
		// the connection close before any response.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	answer(w, key, st.status, st.header, body)
}

// answer writes a response as Stripe does: JSON, a Request-Id, and the
// request's Idempotency-Key echoed.
func answer(w http.ResponseWriter, key string, status int, header map[string]string, body string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Request-Id", "req_fake"+strconv.FormatInt(time.Now().UnixNano()%1e9, 36))
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	sdkdemo.Answer(w, status, header, body)
}

// errorBody is Stripe's error shape.
func errorBody(typ, code, msg string) string {
	e := map[string]string{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}

// customerBody is the customer object created n-th.
func customerBody(n int, email string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "cus_fake" + strconv.Itoa(n), "object": "customer", "email": email,
		"created": 1767225600, "livemode": false,
	})
	return string(b)
}

// created applies the request: a customer is made, its 200 saved.
func created() step { return step{status: http.StatusOK, create: true, save: true} }

// createdLost applies the request and saves its 200, but the connection
// closes before the answer is sent.
func createdLost() step { return step{status: http.StatusOK, create: true, save: true, lost: true} }

// serverError is a 500 after the endpoint began executing: the result is
// saved, so Stripe says a retry cannot help.
func serverError() step {
	return step{
		status: http.StatusInternalServerError,
		header: map[string]string{"Stripe-Should-Retry": "false"},
		body:   errorBody("api_error", "", "An unknown error occurred."),
		save:   true,
	}
}

// lockTimeout is a lock_timeout on status: another request holds the
// object; nothing was executed, and a retry can succeed.
func lockTimeout(status int) step {
	return step{
		status: status,
		header: map[string]string{"Stripe-Should-Retry": "true"},
		body: errorBody("invalid_request_error", "lock_timeout",
			"This object cannot be accessed right now because another API request or Stripe process is currently accessing it."),
	}
}

// rateLimited is Stripe's 429 for too many requests: no wait is given.
func rateLimited() step {
	return step{
		status: http.StatusTooManyRequests,
		body: errorBody("invalid_request_error", "rate_limit",
			"Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits."),
	}
}
