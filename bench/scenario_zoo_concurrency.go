package main

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// zoo-concurrency: a concurrency limiter, as a worker pool or a gateway's
// max-in-flight setting is: at most n requests in flight, each answered 200
// after a fixed time; one beyond n is refused at once with 429 and no hint
// at all (no Retry-After, no quota). A client that knew the limit would
// keep exactly n in flight, so the ideal is ceil(N/n) rounds of the
// request's time: the time the last answer comes back, not the last send,
// since here the limit is on answering.
func init() {
	(&zooScenario{
		name:    "zoo-concurrency",
		order:   73,
		refusal: "429s",
		sets: []zooSet{
			{limit: concurrencyLimit{n: 4, d: 50 * time.Millisecond}, total: 200, workers: 16},
			{limit: concurrencyLimit{n: 8, d: 50 * time.Millisecond}, total: 300, workers: 32},
		},
		quickOmits: []string{"failsafe", "resty"},
	}).register()
}

// concurrencyLimit is at most n requests in flight, each answered in d.
type concurrencyLimit struct {
	n int
	d time.Duration
}

// key, String, start and ideal make a concurrencyLimit a zooLimit.
func (l concurrencyLimit) key() string    { return fmt.Sprintf("n%d-d%s", l.n, l.d) }
func (l concurrencyLimit) String() string { return fmt.Sprintf("%d in flight, %s each", l.n, dur(l.d)) }

func (l concurrencyLimit) start() (zooServer, error) { return concurrencyServer(l.n, l.d), nil }

// ideal is ceil(total/n)·d.
func (l concurrencyLimit) ideal(_ time.Duration, total int) (time.Duration, string) {
	return time.Duration((total+l.n-1)/l.n) * l.d, fmt.Sprintf("ceil(%d/%d) × %s", total, l.n, dur(l.d))
}

// concurrencyServer admits at most n requests at once; each is answered
// 200 after d. A request whose client gave up first is counted neither
// served nor refused.
func concurrencyServer(n int, d time.Duration) *loopServer {
	var inFlight atomic.Int64
	l := &loopServer{t0: time.Now(), served: new(atomic.Int64), refused: new(atomic.Int64)}
	l.s = newServer(func(_ int, w http.ResponseWriter, r *http.Request) {
		if inFlight.Add(1) > int64(n) {
			inFlight.Add(-1)
			l.refused.Add(1)
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		defer inFlight.Add(-1) // before the answer reaches the client
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			l.served.Add(1)
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	})
	return l
}
