package heed_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

func TestPublishedQuotaLimitsTheScope(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		free   int           // sends that go at once after the first
		reset  time.Duration // when the next one may go
	}{
		{"X-RateLimit", hdr("X-RateLimit-Remaining", "2", "X-RateLimit-Reset", "10"), 2, 10 * time.Second},
		{"X-RateLimit unix reset", nil, 1, 20 * time.Second}, // header set in the test, from the fake clock
		{"RateLimit draft", hdr("RateLimit", `"default";r=1;t=5`), 1, 5 * time.Second},
		{"RateLimit-Remaining", hdr("RateLimit-Remaining", "3", "RateLimit-Reset", "7"), 3, 7 * time.Second},
		{"OpenAI", hdr("x-ratelimit-remaining-requests", "2", "x-ratelimit-reset-requests", "6s"), 2, 6 * time.Second},
		{"zero left", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "3"), 0, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := tt.header
				if h == nil {
					h = hdr("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(20*time.Second).Unix(), 10))
				}
				rt := script(reply{status: 200, header: h, body: "ok"}, ok200)
				tr := heed.New(rt)
				start := time.Now()
				for range tt.free + 2 {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
					require.NoError(t, err)
					resp.Body.Close()
				}
				s := rt.requests()
				require.Len(t, s, tt.free+2)
				for i := 1; i <= tt.free; i++ {
					assert.Equal(t, start, s[i].at, "send %d is within the quota", i)
				}
				last := s[tt.free+1].at.Sub(start)
				assert.GreaterOrEqual(t, last, tt.reset, "the send past the quota waits for the reset")
				assert.LessOrEqual(t, last, tt.reset+20*time.Millisecond)
			})
		})
	}
}

func TestPublishedQuotaDefersWhenResetIsTooFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(reply{status: 200, header: hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6m0s")})
		tr := heed.New(rt)
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		start := time.Now()
		_, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 0, de.Attempts, "nothing sent")
		assert.Equal(t, "cooling down", de.Reason)
		assert.GreaterOrEqual(t, de.RetryAt.Sub(start), 6*time.Minute)
		assert.Len(t, rt.requests(), 1)
	})
}

func TestPublishedQuotaIgnored(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
	}{
		{"malformed remaining", hdr("X-RateLimit-Remaining", "zero", "X-RateLimit-Reset", "10")},
		{"malformed reset", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "soon")},
		{"malformed RateLimit", hdr("RateLimit", `"default";r=0;t=`)},
		{"negative", hdr("X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", "10")},
		{"served by a cache", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "10", "Age", "30")},
		{"absent", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(reply{status: 200, header: tt.header, body: "ok"})
				tr := heed.New(rt)
				start := time.Now()
				for range 3 {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
					require.NoError(t, err)
					resp.Body.Close()
				}
				assert.Equal(t, start, time.Now(), "nothing waited")
			})
		})
	}
}

// windowServer is an in-memory API with a fixed window of limit requests per
// second. Over the limit it answers 429 with Retry-After in whole seconds to
// the window's end; with publish, every answer carries the quota left.
type windowServer struct {
	limit   int
	publish bool
	latency time.Duration

	mu     sync.Mutex
	window int64
	count  int
	served int
	refuse int
}

func (s *windowServer) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(s.latency / 2)
	now := time.Now()
	s.mu.Lock()
	w := now.UnixNano() / int64(time.Second)
	if w != s.window {
		s.window, s.count = w, 0
	}
	end := time.Unix(0, (w+1)*int64(time.Second))
	toEnd := strconv.Itoa(int(math.Ceil(end.Sub(now).Seconds())))
	h := http.Header{}
	status := 200
	if s.count >= s.limit {
		status = 429
		s.refuse++
		h.Set("Retry-After", toEnd)
	} else {
		s.count++
		s.served++
	}
	if s.publish {
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(s.limit-s.count))
		h.Set("X-RateLimit-Reset", toEnd)
	}
	s.mu.Unlock()
	time.Sleep(s.latency / 2)
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
}

// TestHerdInMemory sends 200 requests from 16 goroutines to a 40/s window,
// and compares heed with the window arithmetic.
func TestHerdInMemory(t *testing.T) {
	tests := []struct {
		name       string
		publish    bool
		maxRefused int
	}{
		{"hints only", false, 16 * 5}, // the sends in flight when a window runs out: at most one per goroutine
		{"published quota", true, 4},  // at most 2% of 200
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &windowServer{limit: 40, publish: tt.publish, latency: 2 * time.Millisecond}
				tr := heed.New(srv, heed.WithPolicy(heed.Policy{MaxAttempts: 20}))
				start := time.Now()
				jobs := make(chan int)
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() {
						for range jobs {
							ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
							resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
							cancel()
							if assert.NoError(t, err) {
								assert.Equal(t, 200, resp.StatusCode)
							}
						}
					})
				}
				for i := range 200 {
					jobs <- i
				}
				close(jobs)
				wg.Wait()
				took := time.Since(start)
				ideal := 4 * time.Second // 200 at 40 a window: the fifth window opens at 4s
				assert.Equal(t, 200, srv.served)
				assert.LessOrEqual(t, srv.refuse, tt.maxRefused)
				assert.LessOrEqual(t, took.Seconds(), 1.05*ideal.Seconds()+0.05, "took %v", took)
				t.Logf("%s: took %v for ideal %v, 429s %d", tt.name, took, ideal, srv.refuse)
			})
		})
	}
}

// bucketServer is an in-memory API with a token bucket: rate a second,
// burst at most. Refused, it answers 429 with retry-after-ms, the exact
// time until the next token.
type bucketServer struct {
	rate, burst float64
	latency     time.Duration

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	served  int
	refused int
}

func (s *bucketServer) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(s.latency / 2)
	now := time.Now()
	s.mu.Lock()
	if s.last.IsZero() {
		s.last, s.tokens = now, s.burst
	}
	s.tokens = math.Min(s.burst, s.tokens+now.Sub(s.last).Seconds()*s.rate)
	s.last = now
	h := http.Header{}
	status := 200
	if s.tokens >= 1 {
		s.tokens--
		s.served++
	} else {
		status = 429
		s.refused++
		h.Set("retry-after-ms", strconv.Itoa(int(math.Ceil((1-s.tokens)/s.rate*1000))))
	}
	s.mu.Unlock()
	time.Sleep(s.latency / 2)
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
}

// TestHerdBucketInMemory sends 300 requests from 32 goroutines to a bucket
// of 100 a second with a burst of 10: the adaptive limiter paces the scope
// near the bucket's rate, so few requests are refused and none fails.
func TestHerdBucketInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &bucketServer{rate: 100, burst: 10, latency: 2 * time.Millisecond}
		tr := heed.New(srv, heed.WithPolicy(heed.Policy{MaxAttempts: 20, MinWait: 10 * time.Millisecond}))
		start := time.Now()
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for range jobs {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
					if assert.NoError(t, err) {
						assert.Equal(t, 200, resp.StatusCode)
					}
				}
			})
		}
		for i := range 300 {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		took := time.Since(start)
		ideal := 2900 * time.Millisecond // 10 at once, then 290 at 100 a second
		assert.Equal(t, 300, srv.served)
		assert.LessOrEqual(t, srv.refused, 40, "one burst of 32, then a handful")
		assert.LessOrEqual(t, took.Seconds(), 1.1*ideal.Seconds(), "took %v", took)
		t.Logf("took %v for ideal %v, 429s %d", took, ideal, srv.refused)
	})
}

// TestLoneCallerIsNotPaced: one request at a time makes no herd, so after a
// throttle the next requests go as soon as the hint allows, unpaced.
func TestLoneCallerIsNotPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		replies := []reply{ok200, ok200, ok200, tooMany("Retry-After", "1")}
		for range 20 {
			replies = append(replies, ok200)
		}
		rt := script(replies...)
		tr := heed.New(rt, heed.WithObserver(rec.observe))
		for range 20 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			resp.Body.Close()
		}
		for _, e := range rec.events {
			assert.NotEqual(t, "pacing", e.Source, "a lone caller is left to the server's hints")
		}
		g := rt.gaps()
		require.Len(t, g, 20)
		assert.Equal(t, time.Second, g[3], "the hint, exactly")
		for i, d := range g {
			if i != 3 {
				assert.Zero(t, d, "gap %d", i)
			}
		}
	})
}

// servedInOrder is an in-memory API that serves its requests in the order
// they come, the i-th leaving left[i] of its quota until a reset 10 s
// away, and answers the i-th after latency[i], so answers may come out of
// order. Past the lists it answers at once, leaving 0.
type servedInOrder struct {
	left    []int
	latency []time.Duration

	mu   sync.Mutex
	sent []time.Time
}

func (s *servedInOrder) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	i := len(s.sent)
	s.sent = append(s.sent, time.Now())
	s.mu.Unlock()
	left, latency := 0, time.Duration(0)
	if i < len(s.left) {
		left, latency = s.left[i], s.latency[i]
	}
	time.Sleep(latency)
	h := hdr("X-RateLimit-Remaining", strconv.Itoa(left), "X-RateLimit-Reset", "10")
	return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: r}, nil
}

func (s *servedInOrder) sendTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.sent...)
}

// TestPublishedQuotaWhileSendsInFlight: two sends go out; the second
// answers first, leaving 1, and the first, still in flight, is set against
// it, so the quota is spent. When the first answers, leaving 2, it was
// counted already and gives its send back. A third request that came in
// between goes at its next recheck, long before the reset, if its time
// could cover the reset; if not, it defers at once, against the reset.
func TestPublishedQuotaWhileSendsInFlight(t *testing.T) {
	tests := []struct {
		name     string
		deadline time.Duration // of the third request; 0: none
		deferred bool
	}{
		{"time for the reset", 0, false},
		{"no time for the reset", time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &servedInOrder{left: []int{2, 1}, latency: []time.Duration{5 * time.Millisecond, time.Millisecond}}
				tr := heed.New(srv)
				start := time.Now()
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() {
						resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
						if assert.NoError(t, err) {
							resp.Body.Close()
						}
					})
					synctest.Wait() // sent in this order
				}
				time.Sleep(2 * time.Millisecond) // the second has answered
				ctx := t.Context()
				if tt.deadline > 0 {
					c, cancel := context.WithTimeout(ctx, tt.deadline)
					defer cancel()
					ctx = c
				}
				asked := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
				returned := time.Now()
				wg.Wait()
				sent := srv.sendTimes()
				if tt.deferred {
					var de *heed.DeferredError
					require.ErrorAs(t, err, &de)
					assert.Equal(t, asked, returned, "at once")
					assert.False(t, de.RetryAt.Before(start.Add(time.Millisecond+10*time.Second)), "retry at the reset: %v", de.RetryAt.Sub(start))
					assert.Len(t, sent, 2)
					return
				}
				require.NoError(t, err)
				resp.Body.Close()
				require.Len(t, sent, 3)
				recheck := asked.Add(rules.QuotaRecheck)
				assert.False(t, sent[2].Before(recheck), "not before the send came back: %v", sent[2].Sub(start))
				assert.LessOrEqual(t, sent[2].Sub(recheck), time.Millisecond, "at the recheck, not the reset: %v", sent[2].Sub(start))
			})
		})
	}
}

// A quota published on a response of any status limits the scope.
func TestDesignPublishedQuotaFromAnyStatus(t *testing.T) {
	for _, status := range []int{201, 404, 500} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(reply{status: status, header: hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "5")}, ok200)
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
				start := time.Now()
				for range 2 {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
					require.NoError(t, err)
					resp.Body.Close()
				}
				s := rt.requests()
				require.Len(t, s, 2)
				assert.GreaterOrEqual(t, s[1].at.Sub(start), 5*time.Second)
			})
		})
	}
}

// A server that publishes its quota never has to answer 429: a caller that
// sends one request at a time, or fewer at once than the quota, gets none.
func TestDesignPublishedQuotaNeverNeeds429(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(strings.Repeat("w", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &windowServer{limit: 5, publish: true, latency: 2 * time.Millisecond}
				tr := heed.New(srv)
				jobs := make(chan int)
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for range jobs {
							resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
							if assert.NoError(t, err) {
								assert.Equal(t, 200, resp.StatusCode)
							}
						}
					})
				}
				for i := range 40 {
					jobs <- i
				}
				close(jobs)
				wg.Wait()
				assert.Equal(t, 40, srv.served)
				assert.Zero(t, srv.refuse, "429s")
			})
		})
	}
}

// Published quotas limit the scope whatever Gate the Transport has.
func TestDesignPublishedQuotaWithAPlainGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(reply{status: 200, header: hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "5")}, ok200)
		tr := heed.New(rt, heed.WithGate(designPlainGate{heed.NewGate()}))
		start := time.Now()
		for range 2 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			resp.Body.Close()
		}
		s := rt.requests()
		require.Len(t, s, 2)
		assert.GreaterOrEqual(t, s[1].at.Sub(start), 5*time.Second)
	})
}

// TestSpentDimensionHoldsPastAnEarlierReset: a dimension spent until its
// reset (tokens, 30 s) holds the scope that long, though the gate already
// knows an earlier reset (the requests', 1 s) for the same scope.
func TestSpentDimensionHoldsPastAnEarlierReset(t *testing.T) {
	for _, tokensReset := range []string{"30s", "6m0s"} {
		t.Run(tokensReset, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(
					reply{status: 200, header: hdr("X-Ratelimit-Remaining-Requests", "100", "X-Ratelimit-Reset-Requests", "1s",
						"X-Ratelimit-Remaining-Tokens", "5000", "X-Ratelimit-Reset-Tokens", "1s")},
					reply{status: 200, header: hdr("X-Ratelimit-Remaining-Requests", "99", "X-Ratelimit-Reset-Requests", "1s",
						"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", tokensReset)},
					reply{status: 200})
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
				for range 2 {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "https://api.openai.com/v1/chat/completions", nil))
					require.NoError(t, err)
					require.NoError(t, resp.Body.Close())
				}
				time.Sleep(2 * time.Second)
				ctx := withDeadline(t, t.Context(), time.Second)
				_, err := tr.RoundTrip(newRequest(t, ctx, "POST", "https://api.openai.com/v1/chat/completions", nil))
				var de *heed.DeferredError
				assert.True(t, errors.As(err, &de), "tokens spent until their reset: %v", err)
				assert.Len(t, rt.requests(), 2, "nothing sent before the tokens' reset")
			})
		})
	}
}
