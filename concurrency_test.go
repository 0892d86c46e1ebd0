package heed_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// capServer is a concurrency limiter: at most limit requests in flight,
// each taking took; one more is refused at once with a 429 and no hint.
type capServer struct {
	limit    int32
	took     time.Duration
	inflight atomic.Int32
	most     atomic.Int32
	served   atomic.Int32
	refused  atomic.Int32
}

func (s *capServer) RoundTrip(r *http.Request) (*http.Response, error) {
	n := s.inflight.Add(1)
	if n > s.limit {
		s.inflight.Add(-1)
		s.refused.Add(1)
		return &http.Response{StatusCode: 429, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("too many concurrent requests")), Request: r}, nil
	}
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(s.took)
	s.inflight.Add(-1)
	s.served.Add(1)
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
}

// TestLearnedConcurrencyCap: against a concurrency limiter that gives no
// hint, heed learns the cap from which sends were refused and which were
// served, queues the rest, and finishes near the time a client that knew
// the cap would need, with few refusals.
func TestLearnedConcurrencyCap(t *testing.T) {
	tests := []struct {
		limit, goroutines, n int
	}{
		{4, 16, 200},
		{8, 32, 300},
		{2, 8, 60},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d in flight", tt.limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &capServer{limit: int32(tt.limit), took: 50 * time.Millisecond}
				tr := heed.New(srv)
				start := time.Now()
				var next atomic.Int32
				errs := make(chan error, tt.goroutines)
				for range tt.goroutines {
					go func() {
						for next.Add(1) <= int32(tt.n) {
							resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/speech", nil))
							if err != nil {
								errs <- err
								return
							}
							resp.Body.Close()
							if resp.StatusCode != 200 {
								errs <- fmt.Errorf("status %d", resp.StatusCode)
								return
							}
						}
						errs <- nil
					}()
				}
				for range tt.goroutines {
					require.NoError(t, <-errs)
				}
				took := time.Since(start)
				ideal := time.Duration((tt.n+tt.limit-1)/tt.limit) * 50 * time.Millisecond
				t.Logf("%d in flight: %v (ideal %v, %.2f×), %d refused", tt.limit, took, ideal, float64(took)/float64(ideal), srv.refused.Load())
				assert.Equal(t, int32(tt.n), srv.served.Load())
				assert.LessOrEqual(t, took, ideal*3/2, "within 1.5× the ideal")
				assert.LessOrEqual(t, srv.refused.Load(), int32(3*tt.goroutines), "few refusals")
			})
		})
	}
}

// rateServer refuses, with a 429 and no hint, a request that comes within
// every of the last one it served: time decides, not the number in flight.
type rateServer struct {
	every   time.Duration
	mu      sync.Mutex
	last    time.Time
	served  atomic.Int32
	refused atomic.Int32
}

func (s *rateServer) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	now := time.Now()
	ok := s.last.IsZero() || now.Sub(s.last) >= s.every
	if ok {
		s.last = now
	}
	s.mu.Unlock()
	if !ok {
		s.refused.Add(1)
		return &http.Response{StatusCode: 429, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	}
	s.served.Add(1)
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// TestLearnedCapYieldsToTime: against a server whose hint-less refusals
// follow time, the cap a herd's first refusals set is dropped once a
// refusal comes with nothing else in flight, and backoff and pacing take
// over: every request is served, and the refusals stay few.
func TestLearnedCapYieldsToTime(t *testing.T) {
	for _, every := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond} {
		t.Run(every.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &rateServer{every: every}
				tr := heed.New(srv, heed.WithPolicy(heed.Policy{MaxAttempts: 10}))
				const goroutines, n = 8, 40
				var next atomic.Int32
				var failed atomic.Int32
				var wg sync.WaitGroup
				for range goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= n {
							resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/x", nil))
							if err != nil || resp.StatusCode != 200 {
								failed.Add(1)
							}
							if resp != nil {
								resp.Body.Close()
							}
						}
					}()
				}
				wg.Wait()
				t.Logf("every %v: %d served, %d refused, %d failed", every, srv.served.Load(), srv.refused.Load(), failed.Load())
				assert.Zero(t, failed.Load())
				assert.Equal(t, int32(n), srv.served.Load())
				assert.LessOrEqual(t, srv.refused.Load(), int32(4*n), "refusals stay within a few per request")
			})
		})
	}
}
