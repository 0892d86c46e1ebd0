package main

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/httprate"
)

// zoo-httprate: go-chi/httprate, the rate limiter of chi's middleware, in
// its default form: a sliding window counter of limit requests per window
// over one key (httprate.Key("*"): the limit of one API key, as all the
// herd's requests come from one address anyway), its windows aligned to
// the instant the limiter was made. A request is refused when the
// previous window's count, weighted by the part of it the sliding window
// still covers, plus the current window's count, rounded, has no room for
// it; the refusal is httprate's own: 429 with Retry-After: the window's
// length in seconds, and X-RateLimit-Limit, -Remaining (0) and -Reset (the
// Unix time of the current window's end, in whole seconds, rounded down).
// Served responses carry X-RateLimit-Limit, -Remaining and -Reset too.
//
// The ideal is what a client that sends every request at the first
// instant the limiter admits it achieves (httprateLimit.ideal): limit at once,
// then, in each following window, limit more, the c-th of them (from 0)
// once (c + ½)/limit of the window has passed, when the previous window's
// weight has decayed enough.
func init() {
	(&zooScenario{
		name:    "zoo-httprate",
		order:   71,
		refusal: "429s",
		sets: []zooSet{
			{limit: httprateLimit{limit: 40, window: time.Second}, total: 200, workers: 16},
			{limit: httprateLimit{limit: 20, window: time.Second}, total: 200, workers: 16},
		},
		quickOmits: []string{"failsafe", "resty"},
	}).register()
}

// httprateLimit is limit requests per window.
type httprateLimit struct {
	limit  int
	window time.Duration
}

// key, String, start and ideal make an httprateLimit a zooLimit.
func (l httprateLimit) key() string { return fmt.Sprintf("l%d-w%s", l.limit, l.window) }
func (l httprateLimit) String() string {
	return fmt.Sprintf("%d per %g s", l.limit, l.window.Seconds())
}

func (l httprateLimit) start() (zooServer, error) { return httprateServer(l.limit, l.window), nil }

// ideal is the last request's time after the first, for total requests
// the first of which is sent lead after the limiter was made, by a client
// that sends each at the first instant the limiter admits it.
//
// In the first window the herd sends in, nothing was counted before, so
// limit requests go at once. In every window after it the previous one
// counted limit, so the weighted count at a fraction f into the window,
// with c requests in it so far, is limit·(1 − f) + c; httprate admits one
// more while that count, rounded, is at most limit − 1, that is once f is
// past (c + ½)/limit. So the j-th request after the first limit (from 0)
// goes in window k0 + 1 + j/limit at (j mod limit + ½)/limit of it.
func (l httprateLimit) ideal(lead time.Duration, total int) (time.Duration, string) {
	note := fmt.Sprintf("%d at once %s into a window, then %d per window", l.limit, dur(lead%l.window), l.limit)
	if total <= l.limit {
		return 0, note
	}
	j := total - l.limit - 1
	k0 := lead / l.window // the window of the first request
	at := (k0+1+time.Duration(j/l.limit))*l.window + time.Duration((float64(j%l.limit)+0.5)/float64(l.limit)*float64(l.window))
	return at - lead, note
}

// httprateServer is a loopback server behind httprate's limiter over one
// key, with httprate's own answer to a refused request; a request it lets
// through is answered 200. It counts both by the status written.
func httprateServer(limit int, window time.Duration) *loopServer {
	l := &loopServer{t0: time.Now(), served: new(atomic.Int64), refused: new(atomic.Int64)}
	rl := httprate.NewRateLimiter(limit, window, httprate.WithKeyFuncs(httprate.Key("*")))
	h := rl.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	l.s = newServer(func(_ int, w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		switch sw.status {
		case http.StatusOK:
			l.served.Add(1)
		case http.StatusTooManyRequests:
			l.refused.Add(1)
		}
	})
	return l
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
