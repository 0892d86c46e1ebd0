package heed_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
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

// The pacing tests run a herd through one Transport against in-memory
// limiters of each shape, in a bubble, so their timing is exact: every
// figure is the fake clock's. Each limiter answers after a fixed latency,
// records when each request arrived, and counts any that arrived after a
// refusal's answer had reached the client but before the time it gave.

// limiter is one shape of server-side limit.
type limiter interface {
	// admit decides a request arriving at now; a refused one is told to
	// come back after the returned wait, which the server rounds as it
	// speaks (hint).
	admit(now time.Time) (ok bool, wait time.Duration)
}

// limitServer serves 200 or 429 by its limiter, after latency.
type limitServer struct {
	lim     limiter
	latency time.Duration
	hint    func(time.Duration) http.Header // the refusal's headers for a wait

	mu       sync.Mutex
	refusals []refusal // the refusals delivered
	early    int       // requests that arrived after a refusal was delivered, before the time it gave
	served   int
	refused  int
}

// refusal is a refusal delivered to the client at delivered, which gave
// until.
type refusal struct{ delivered, until time.Time }

func (s *limitServer) RoundTrip(r *http.Request) (*http.Response, error) {
	now := time.Now()
	s.mu.Lock()
	for _, f := range s.refusals {
		if now.After(f.delivered) && now.Before(f.until) {
			s.early++
			break
		}
	}
	ok, wait := s.lim.admit(now)
	if ok {
		s.served++
	} else {
		s.refused++
	}
	s.mu.Unlock()
	time.Sleep(s.latency)
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: r}
	if !ok {
		resp.StatusCode = http.StatusTooManyRequests
		resp.Header = s.hint(wait)
		// The client has the refusal from now on: nothing may arrive
		// before the time it gave.
		now := time.Now()
		wait, _, _ := heed.Hint(resp, now)
		s.mu.Lock()
		s.refusals = append(s.refusals, refusal{now, now.Add(wait)})
		s.mu.Unlock()
	}
	return resp, nil
}

// wholeSeconds is Retry-After in whole seconds, rounded up.
func wholeSeconds(wait time.Duration) http.Header {
	return http.Header{"Retry-After": {strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10)}}
}

// tokenBucket refills rate tokens a second, up to burst, full at first.
type tokenBucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(rate float64, burst int) *tokenBucket {
	return &tokenBucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

func (b *tokenBucket) admit(now time.Time) (bool, time.Duration) {
	if !b.last.IsZero() {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// memWindow serves limit requests a window, the window starting with the
// first request after the last one ended, as a Redis INCR and EXPIRE
// limiter does; a refusal is told the window's end.
type memWindow struct {
	limit  int
	period time.Duration
	start  time.Time
	count  int
}

func (w *memWindow) admit(now time.Time) (bool, time.Duration) {
	if w.start.IsZero() || !now.Before(w.start.Add(w.period)) {
		w.start, w.count = now, 0
	}
	if w.count < w.limit {
		w.count++
		return true, 0
	}
	return false, w.start.Add(w.period).Sub(now)
}

// herdResult is what a herd's run gave.
type herdResult struct {
	wall            time.Duration
	failed          int
	served, refused int
	early           int
}

// runHerd sends total GETs from workers goroutines through one Transport to
// srv, in the bubble, and returns when the last one ended.
func runHerd(t *testing.T, srv *limitServer, total, workers int, opts ...heed.Option) herdResult {
	tr := heed.New(srv, opts...)
	client := &http.Client{Transport: tr}
	start := time.Now()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				req, err := http.NewRequest(http.MethodGet, "http://api.test/v1/items", nil)
				require.NoError(t, err)
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return herdResult{wall: time.Since(start), failed: int(failed.Load()), served: srv.served, refused: srv.refused, early: srv.early}
}

// TestPacingAfterWholeSecondHints: a token bucket that rounds its hint up
// to a whole second costs an honouring client a second per refusal. The
// release learns the burst from the first, fits the rate from one
// overshoot, and then paces below it: within 2× the ideal, (N − burst)/rate,
// at every parameter set, with no send before a time the server gave and
// no request failed.
func TestPacingAfterWholeSecondHints(t *testing.T) {
	for _, tc := range []struct {
		rate           float64
		burst          int
		total, workers int
	}{
		{100, 10, 300, 32},
		{50, 5, 300, 32},
		{20, 5, 200, 16},
		{200, 20, 600, 32},
		{10, 2, 100, 8},
	} {
		t.Run(fmt.Sprintf("%g/s burst %d", tc.rate, tc.burst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &limitServer{lim: newTokenBucket(tc.rate, tc.burst), latency: 2 * time.Millisecond, hint: wholeSeconds}
				r := runHerd(t, srv, tc.total, tc.workers)
				ideal := time.Duration(float64(tc.total-tc.burst) / tc.rate * float64(time.Second))
				t.Logf("%v against an ideal of %v (%.2f×), %d 429s", r.wall, ideal, r.wall.Seconds()/ideal.Seconds(), r.refused)
				assert.Zero(t, r.failed, "no request fails")
				assert.Zero(t, r.early, "no send before a time the server gave")
				assert.Equal(t, tc.total, r.served)
				assert.LessOrEqual(t, r.wall, 2*ideal, "within 2× the ideal")
				assert.LessOrEqual(t, r.refused, tc.workers+tc.total/10, "a burst of refusals to learn from, and few more")
			})
		})
	}
}

// TestPacingKeepsAWindowWhole: against fixed windows answering with their
// end in whole seconds, the release lets each window's capacity go at
// once, as the gate alone did: the herd takes no more than the windows it
// needs, plus a little, and each window is refused little more than once.
func TestPacingKeepsAWindowWhole(t *testing.T) {
	for _, tc := range []struct {
		limit          int
		period         time.Duration
		total, workers int
	}{
		{40, time.Second, 200, 16},
		{20, time.Second, 200, 32},
		{100, 2 * time.Second, 500, 16},
	} {
		t.Run(fmt.Sprintf("%d per %v", tc.limit, tc.period), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &limitServer{lim: &memWindow{limit: tc.limit, period: tc.period}, latency: 2 * time.Millisecond, hint: wholeSeconds}
				r := runHerd(t, srv, tc.total, tc.workers)
				windows := (tc.total + tc.limit - 1) / tc.limit
				ideal := time.Duration(windows-1) * tc.period
				t.Logf("%v against an ideal of %v, %d 429s", r.wall, ideal, r.refused)
				assert.Zero(t, r.failed)
				assert.Zero(t, r.early)
				assert.LessOrEqual(t, r.wall, ideal+ideal/20+100*time.Millisecond, "within 1.05× the windows, and a tenth of a second")
				assert.LessOrEqual(t, r.refused, tc.workers+2*windows, "the first herd's refusals, then about one a window")
			})
		})
	}
}
