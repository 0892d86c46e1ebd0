package jobpoll_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// answer is one scripted reply of a statusRT.
type answer struct {
	status int               // 0: 200
	header map[string]string // e.g. Retry-After
	body   string
}

// running, done and hinted build common answers.
func state(s string) answer { return answer{body: `{"status":"` + s + `"}`} }

func hinted(s, retryAfter string) answer {
	a := state(s)
	a.header = map[string]string{"Retry-After": retryAfter}
	return a
}

// statusRT is an in-memory RoundTripper that answers status requests from
// a script, repeating the last answer when it runs out, and records when
// each request came.
type statusRT struct {
	mu      sync.Mutex
	answers []answer
	at      []time.Time
	reqs    []*http.Request
	bodies  []string // of the requests that had one
}

func scripted(answers ...answer) *statusRT { return &statusRT{answers: answers} }

func (f *statusRT) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = append(f.at, time.Now())
	f.reqs = append(f.reqs, r)
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		f.bodies = append(f.bodies, string(b))
	}
	a := f.answers[min(len(f.at), len(f.answers))-1]
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range a.header {
		h.Set(k, v)
	}
	code := a.status
	if code == 0 {
		code = http.StatusOK
	}
	return &http.Response{
		StatusCode: code, Status: http.StatusText(code), Header: h,
		Body: io.NopCloser(strings.NewReader(a.body)), ContentLength: int64(len(a.body)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
	}, nil
}

// times returns the offsets from start of every request so far.
func (f *statusRT) times(start time.Time) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Duration, len(f.at))
	for i, at := range f.at {
		out[i] = at.Sub(start)
	}
	return out
}

// checker returns an HTTPChecker that reads "status" through a heed
// Transport over rt, with policy p for the check itself.
func checker(rt http.RoundTripper, p heed.Policy) *jobpoll.HTTPChecker {
	return &jobpoll.HTTPChecker{
		URL:    "https://api.example.com/v1/jobs/job-1",
		Field:  "status",
		Client: &http.Client{Transport: heed.New(rt, heed.WithPolicy(p))},
	}
}

// seconds is a shorthand for a list of durations in whole seconds.
func seconds(ss ...float64) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = time.Duration(s * float64(time.Second))
	}
	return out
}
