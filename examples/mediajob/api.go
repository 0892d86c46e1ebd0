package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
	"go.uber.org/zap"
)

// The media API this worker speaks (the fake in fakeapi.go serves it):
//
//	POST /v1/jobs                       {"prompt": "..."}, with Idempotency-Key
//	     -> 2xx {"id": "...", "status": "queued"}; the same key gives the same job
//	GET  /v1/jobs/{id}                  -> {"id", "status", "output": {"url"}, "error"}
//	GET  /v1/jobs?idempotency_key={key} -> {"data": [job...]}
//
// Statuses: queued and running, then succeeded, failed or canceled. Any
// response may carry Retry-After (or retry-after-ms).

// Job statuses of the API.
var (
	runningStatuses  = []string{"queued", "running"}
	terminalStatuses = []string{"succeeded", "failed", "canceled"}
)

// remoteJob is a job as the API describes it.
type remoteJob struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Output struct {
		URL string `json:"url"`
	} `json:"output"`
	Error string `json:"error"`
}

// APIError is a response of the API that heed delivered as final: a status
// that no wait fixes, or one that outlasted heed's attempts.
type APIError struct {
	Status int
	Body   string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("media API: %d %s: %s", e.Status, http.StatusText(e.Status), e.Body)
}

// Policies: the create and the status checks each get a heed Transport
// with a time limit of its own; the two share one gate, so a 429 on either
// cools both. A worker does not sit on a long wait: past MaxWait, heed
// defers, and the job is stored with its RetryAt for a later run.
var (
	createPolicy = heed.Policy{Name: "create job", MaxAttempts: 4, MaxWait: 30 * time.Second,
		MinWait: 100 * time.Millisecond, Backoff: heed.EqualJitter(500*time.Millisecond, 10*time.Second)}
	statusPolicy = heed.Policy{Name: "job status", MaxElapsed: 20 * time.Second, MaxWait: 30 * time.Second,
		MinWait: 100 * time.Millisecond, Backoff: heed.EqualJitter(500*time.Millisecond, 10*time.Second)}
)

// API is a client of the media API.
type API struct {
	base   *url.URL
	token  string
	create *http.Client
	status *http.Client
	bases  []*http.Transport
}

// NewAPI returns a client for the API at baseURL, sending token as a
// bearer token.
func NewAPI(baseURL, token string, create, status heed.Policy, log *zap.Logger) (*API, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, err
	}
	gate := heed.NewGate()
	cb := http.DefaultTransport.(*http.Transport).Clone()
	sb := http.DefaultTransport.(*http.Transport).Clone()
	return &API{
		base:   u,
		token:  token,
		create: &http.Client{Transport: heed.New(cb, heed.WithPolicy(create), heed.WithGate(gate), heed.WithLogger(log))},
		status: &http.Client{Transport: heed.New(sb, heed.WithPolicy(status), heed.WithGate(gate), heed.WithLogger(log))},
		bases:  []*http.Transport{cb, sb},
	}, nil
}

// Close closes idle connections.
func (a *API) Close() {
	for _, t := range a.bases {
		t.CloseIdleConnections()
	}
}

func (a *API) url(path string, q url.Values) string {
	u := a.base.JoinPath(path)
	u.RawQuery = q.Encode()
	return u.String()
}

func (a *API) header() http.Header {
	return http.Header{"Authorization": {"Bearer " + a.token}, "Accept": {"application/json"}}
}

// Create starts a job. key makes it idempotent: heed may resend it after
// an ambiguous failure, and the API answers a resend with the same job.
// next is when the API asked the first status check to come, if it did.
func (a *API) Create(ctx context.Context, key, prompt string) (j remoteJob, next time.Time, err error) {
	body, _ := json.Marshal(map[string]string{"prompt": prompt})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url("v1/jobs", nil), bytes.NewReader(body))
	if err != nil {
		return j, next, err
	}
	req.Header = a.header()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := a.create.Do(req)
	if err != nil {
		return j, next, err
	}
	if d, _, ok := heed.Hint(resp, time.Now()); ok {
		next = time.Now().Add(d)
	}
	return j, next, decode(resp, &j)
}

// FindByKey returns the job the API made for key, if it made one: how a
// worker learns the outcome of a create whose answer it never got.
func (a *API) FindByKey(ctx context.Context, key string) (j remoteJob, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url("v1/jobs", url.Values{"idempotency_key": {key}}), nil)
	if err != nil {
		return j, false, err
	}
	req.Header = a.header()
	resp, err := a.status.Do(req)
	if err != nil {
		return j, false, err
	}
	var list struct {
		Data []remoteJob `json:"data"`
	}
	if err := decode(resp, &list); err != nil || len(list.Data) == 0 {
		return j, false, err
	}
	return list.Data[0], true, nil
}

// Checker returns a jobpoll checker for the job with the given id.
func (a *API) Checker(id string) jobpoll.Checker {
	return &jobpoll.HTTPChecker{
		URL:    a.url("v1/jobs/"+url.PathEscape(id), nil),
		Field:  "status",
		Header: a.header(),
		Client: a.status,
	}
}

// decode reads a JSON response into v, or returns an *APIError.
func decode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &APIError{Status: resp.StatusCode, Body: string(b)}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("media API: %s: %w", strconv.Quote(string(b)), err)
	}
	return nil
}
