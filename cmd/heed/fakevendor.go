// The fake vendor: the in-process API the demo plays against, one path
// per behaviour.

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Paths of the fake vendor's API, one per behaviour.
const (
	pathModels  = "/v1/models"           // 429 three times without a hint, then 200
	pathFiles   = "/v1/files"            // 429 with Retry-After: 2, then 200
	pathStatus  = "/v1/status"           // 503 with an HTTP-date Retry-After, then 200
	pathBatch   = "/v1/batches/b_42"     // 429 with Retry-After: 120, always
	pathChat    = "/v1/chat/completions" // 429 insufficient_quota, always
	pathCharges = "/v1/charges"          // applies the charge, then loses the response
)

// quotaBody is what OpenAI answers, with status 429, when the account has
// run out of credit: no wait fixes it.
const quotaBody = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`

// arrival is one request the fake vendor received.
type arrival struct {
	At         time.Time // when it arrived, with a monotonic reading
	Method     string
	Path       string
	Status     int    // the status answered; 0 when the response was dropped
	Key        string // the Idempotency-Key header, if any
	RetryAfter string // the Retry-After header answered, if any
}

// charge is one charge the fake vendor applied.
type charge struct {
	ID   string
	Key  string // the idempotency key it was made with, if any
	Body string
}

// fakeVendor is an in-process stand-in for a rate-limited vendor API on
// 127.0.0.1. Each path answers with a fixed script (see the path
// constants), and every request is recorded, so that the demo can show what
// the server saw next to what heed decided.
type fakeVendor struct {
	srv *httptest.Server

	mu       sync.Mutex
	arrivals []arrival
	hits     map[string]int // arrivals so far per path
	charges  []charge       // charges applied, in order
	byKey    map[string]int // index in charges of the charge made with a key
}

// startFakeVendor starts the fake vendor. Close it when done.
func startFakeVendor() *fakeVendor {
	v := &fakeVendor{hits: make(map[string]int), byKey: make(map[string]int)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathModels, v.models)
	mux.HandleFunc("GET "+pathFiles, v.files)
	mux.HandleFunc("GET "+pathStatus, v.status)
	mux.HandleFunc("GET "+pathBatch, v.batch)
	mux.HandleFunc("POST "+pathChat, v.chat)
	mux.HandleFunc("POST "+pathCharges, v.charge)
	v.srv = httptest.NewServer(mux)
	return v
}

// URL returns the base URL of the fake vendor, such as http://127.0.0.1:40123.
func (v *fakeVendor) URL() string { return v.srv.URL }

// Close shuts the fake vendor down and waits for its handlers to return.
func (v *fakeVendor) Close() { v.srv.Close() }

// mark returns a position in the arrivals, for since.
func (v *fakeVendor) mark() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.arrivals)
}

// since returns a copy of the arrivals recorded after mark.
func (v *fakeVendor) since(mark int) []arrival {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]arrival(nil), v.arrivals[mark:]...)
}

// chargesWithKey returns the charges applied, and how many of them were
// made with key ("" for none).
func (v *fakeVendor) chargesWithKey(key string) (all []charge, withKey int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, c := range v.charges {
		if c.Key == key {
			withKey++
		}
	}
	return append([]charge(nil), v.charges...), withKey
}

// arrive records r and returns its index in the arrivals and how many
// requests its path has received, this one included.
func (v *fakeVendor) arrive(r *http.Request) (i, n int) {
	now := time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.hits[r.URL.Path]++
	v.arrivals = append(v.arrivals, arrival{
		At:     now,
		Method: r.Method,
		Path:   r.URL.Path,
		Key:    r.Header.Get("Idempotency-Key"),
	})
	return len(v.arrivals) - 1, v.hits[r.URL.Path]
}

// answer records and writes the response to arrival i. A Retry-After
// header set in w is recorded too.
func (v *fakeVendor) answer(w http.ResponseWriter, i, status int, body string) {
	v.mu.Lock()
	v.arrivals[i].Status = status
	v.arrivals[i].RetryAfter = w.Header().Get("Retry-After")
	v.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// drop closes the connection of arrival i without answering: the client
// cannot know whether the request took effect.
func (v *fakeVendor) drop(w http.ResponseWriter, i int) {
	v.mu.Lock()
	v.arrivals[i].Status = 0
	v.mu.Unlock()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(fmt.Sprintf("fake vendor: hijack: %v", err)) // net/http recovers and closes the connection
	}
	conn.Close()
}

const rateLimited = `{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}`

// models answers 429 without saying how long to wait, three times, then 200.
func (v *fakeVendor) models(w http.ResponseWriter, r *http.Request) {
	i, n := v.arrive(r)
	if n <= 3 {
		v.answer(w, i, http.StatusTooManyRequests, rateLimited)
		return
	}
	v.answer(w, i, http.StatusOK, `{"data":[{"id":"model-1"}]}`)
}

// files answers 429 with Retry-After: 2 the first time, then 200.
func (v *fakeVendor) files(w http.ResponseWriter, r *http.Request) {
	i, n := v.arrive(r)
	if n == 1 {
		w.Header().Set("Retry-After", "2")
		v.answer(w, i, http.StatusTooManyRequests, rateLimited)
		return
	}
	v.answer(w, i, http.StatusOK, `{"data":[]}`)
}

// status answers 503 with a Retry-After HTTP-date the first time, then 200.
// HTTP-dates have a resolution of one second, so the date is the first
// whole second at least 2 s ahead.
func (v *fakeVendor) status(w http.ResponseWriter, r *http.Request) {
	i, n := v.arrive(r)
	if n == 1 {
		at := time.Now().Add(2 * time.Second)
		if t := at.Truncate(time.Second); !t.Equal(at) {
			at = t.Add(time.Second)
		}
		w.Header().Set("Retry-After", at.UTC().Format(http.TimeFormat))
		v.answer(w, i, http.StatusServiceUnavailable, `{"error":{"message":"Service temporarily unavailable"}}`)
		return
	}
	v.answer(w, i, http.StatusOK, `{"status":"ok"}`)
}

// batch always answers 429 with Retry-After: 120.
func (v *fakeVendor) batch(w http.ResponseWriter, r *http.Request) {
	i, _ := v.arrive(r)
	w.Header().Set("Retry-After", "120")
	v.answer(w, i, http.StatusTooManyRequests, rateLimited)
}

// chat always answers OpenAI's insufficient_quota 429.
func (v *fakeVendor) chat(w http.ResponseWriter, r *http.Request) {
	i, _ := v.arrive(r)
	io.Copy(io.Discard, r.Body)
	v.answer(w, i, http.StatusTooManyRequests, quotaBody)
}

// charge reads the request body and applies the charge, unless the
// Idempotency-Key was seen before, in which case it answers 200 with the
// charge already made, as Stripe does. Each charge it applies, it applies
// and then drops the connection without answering, as when a response is
// lost on the way back.
func (v *fakeVendor) charge(w http.ResponseWriter, r *http.Request) {
	i, _ := v.arrive(r)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		v.answer(w, i, http.StatusBadRequest, `{"error":{"message":"unreadable body"}}`)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	v.mu.Lock()
	if j, seen := v.byKey[key]; seen && key != "" {
		c := v.charges[j]
		v.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		v.answer(w, i, http.StatusOK, `{"id":"`+c.ID+`","applied_once":true,"idempotent_replayed":true}`)
		return
	}
	c := charge{ID: "ch_" + strconv.Itoa(len(v.charges)+1), Key: key, Body: string(body)}
	v.charges = append(v.charges, c)
	if key != "" {
		v.byKey[key] = len(v.charges) - 1
	}
	v.mu.Unlock()
	v.drop(w, i)
}
