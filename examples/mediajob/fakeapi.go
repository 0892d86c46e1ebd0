package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fakeAPI is a loopback media API (see api.go for its shape). A job is
// queued, then running, then succeeded after a set number of status checks.
// It dedupes creates by Idempotency-Key, can lose the answers to creates
// and throttle status checks on demand, and records every request with
// the earliest time it had asked the client to come back, so a test can
// tell whether any request came early.
type fakeAPI struct {
	srv *httptest.Server

	mu         sync.Mutex
	jobs       map[string]*fakeJob // by id
	byKey      map[string]string   // idempotency key -> id
	notBefore  time.Time           // the latest "come back at" the server gave
	log        []apiRequest
	loseCreate int             // answers to lose: the job is made, the connection dropped
	throttle   []time.Duration // the next status checks get 429 with these waits
	runningFor int             // status checks a job spends running
	pollHint   time.Duration   // retry-after-ms on queued and running answers
}

type fakeJob struct {
	remoteJob
	prompt string
	checks int
}

// apiRequest is one request as the fake saw it.
type apiRequest struct {
	Method, Path, Key string
	At                time.Time
	NotBefore         time.Time // what the server had asked for when it arrived
	Status            int       // 0 when the answer was lost
}

// Early reports whether the request came before the server allowed.
func (r apiRequest) Early() bool { return r.At.Before(r.NotBefore) }

// newFakeAPI starts a fake media API on 127.0.0.1.
func newFakeAPI() *fakeAPI {
	f := &fakeAPI{jobs: make(map[string]*fakeJob), byKey: make(map[string]string), runningFor: 2, pollHint: 100 * time.Millisecond}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// URL is the API's base URL.
func (f *fakeAPI) URL() string { return f.srv.URL }

// Close stops the server.
func (f *fakeAPI) Close() { f.srv.Close() }

// LoseCreates makes the next n creates take effect but lose their answer.
func (f *fakeAPI) LoseCreates(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseCreate = n
}

// Throttle makes the next status checks get 429 with Retry-After waits.
func (f *fakeAPI) Throttle(waits ...time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.throttle = append(f.throttle, waits...)
}

// PollHint sets the retry-after-ms of create, queued and running answers.
func (f *fakeAPI) PollHint(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pollHint = d
}

// Requests returns the requests received so far.
func (f *fakeAPI) Requests() []apiRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiRequest(nil), f.log...)
}

// Created returns how many jobs the API made.
func (f *fakeAPI) Created() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jobs)
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := apiRequest{Method: r.Method, Path: r.URL.Path, Key: r.Header.Get("Idempotency-Key"), At: time.Now(), NotBefore: f.notBefore}
	defer func() { f.log = append(f.log, rec) }()

	if r.Header.Get("Authorization") == "" {
		rec.Status = f.reply(w, http.StatusUnauthorized, 0, map[string]string{"error": "missing token"})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/jobs":
		f.create(w, r, &rec)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/jobs":
		var data []remoteJob
		if id, ok := f.byKey[r.URL.Query().Get("idempotency_key")]; ok {
			data = append(data, f.jobs[id].remoteJob)
		}
		rec.Status = f.reply(w, http.StatusOK, 0, map[string]any{"data": data})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/jobs/"):
		f.status(w, strings.TrimPrefix(r.URL.Path, "/v1/jobs/"), &rec)
	default:
		rec.Status = f.reply(w, http.StatusNotFound, 0, map[string]string{"error": "no such route"})
	}
}

func (f *fakeAPI) create(w http.ResponseWriter, r *http.Request, rec *apiRequest) {
	var in struct {
		Prompt string `json:"prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Prompt == "" || rec.Key == "" {
		rec.Status = f.reply(w, http.StatusBadRequest, 0, map[string]string{"error": "want a prompt and an Idempotency-Key"})
		return
	}
	id, ok := f.byKey[rec.Key]
	if !ok {
		id = "gen_" + strconv.Itoa(len(f.jobs)+1)
		j := &fakeJob{prompt: in.Prompt}
		j.ID, j.Status = id, "queued"
		f.jobs[id] = j
		f.byKey[rec.Key] = id
	} else if f.jobs[id].prompt != in.Prompt {
		rec.Status = f.reply(w, http.StatusUnprocessableEntity, 0, map[string]string{"error": "Idempotency-Key reused with another request"})
		return
	}
	if f.loseCreate > 0 {
		f.loseCreate--
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
	}
	rec.Status = f.reply(w, http.StatusAccepted, f.pollHint, f.jobs[id].remoteJob)
}

func (f *fakeAPI) status(w http.ResponseWriter, id string, rec *apiRequest) {
	if len(f.throttle) > 0 {
		wait := f.throttle[0]
		f.throttle = f.throttle[1:]
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		f.notBefore = rec.At.Add(time.Duration(secs) * time.Second)
		rec.Status = f.reply(w, http.StatusTooManyRequests, 0, map[string]string{"error": "rate limited"})
		return
	}
	j, ok := f.jobs[id]
	if !ok {
		rec.Status = f.reply(w, http.StatusNotFound, 0, map[string]string{"error": "no such job"})
		return
	}
	j.checks++
	switch {
	case j.checks == 1:
		j.Status = "queued"
	case j.checks <= 1+f.runningFor:
		j.Status = "running"
	default:
		j.Status = "succeeded"
		j.Output.URL = fmt.Sprintf("%s/files/%s.mp4", f.srv.URL, j.ID)
	}
	hint := f.pollHint
	if j.Status == "succeeded" {
		hint = 0
	}
	rec.Status = f.reply(w, http.StatusOK, hint, j.remoteJob)
}

// reply writes v as JSON with status, asking for hint before the next
// request when it is set, and returns status.
func (f *fakeAPI) reply(w http.ResponseWriter, status int, hint time.Duration, v any) int {
	if hint > 0 {
		w.Header().Set("retry-after-ms", strconv.FormatInt(hint.Milliseconds(), 10))
		f.notBefore = time.Now().Add(hint)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
	return status
}
