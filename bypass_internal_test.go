package heed

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBypassCountsItsPlacesAsItShuts: shutting a bypass counts the places
// taken in it as sends in flight in the gate, each of which then answers
// to the gate; the bypass opens again only once none is taken and the gate
// keeps nothing of the scope.
func TestBypassCountsItsPlacesAsItShuts(t *testing.T) {
	for _, n := range []int64{0, 1, 3, 17} {
		t.Run(strconv.FormatInt(n, 10), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate().(*memGate)
				var b bypass
				for range n {
					require.True(t, b.enter())
				}
				now := time.Now()
				g.shut("s", &b, now)
				assert.True(t, b.shut())
				assert.False(t, b.enter(), "a shut bypass admits nothing")
				if n > 0 {
					assert.Equal(t, n, g.scopes["s"].inflight, "its places are the gate's sends in flight")
				}
				g.shut("s", &b, now) // again: nothing more is counted
				if n > 0 {
					assert.Equal(t, n, g.scopes["s"].inflight)
				}
				require.NoError(t, g.Hold(t.Context(), "s", now.Add(time.Second)))
				for i := range n {
					assert.False(t, b.leave(), "a place left after the shut answers to the gate")
					g.reopen("s", &b, now)
					assert.True(t, b.shut(), "not open while places are taken, or the gate holds the scope")
					g.done("s", nil, true, 0, now)
					assert.Equal(t, n-i-1, g.scopes["s"].inflight)
				}
				g.reopen("s", &b, now)
				assert.True(t, b.shut(), "not open while the gate holds the scope")
				time.Sleep(time.Second)
				g.reopen("s", &b, time.Now())
				assert.False(t, b.shut(), "open once the hold is over and no place is taken")
				assert.True(t, b.enter())
				assert.True(t, b.leave())
			})
		})
	}
}

// windowed is an in-memory API with a fixed window of limit requests a
// second; over it, a 429 with the whole seconds to the window's end. With
// publish, every answer carries the quota left and its reset.
type windowed struct {
	limit   int
	publish bool

	mu             sync.Mutex
	window         int64
	count, refused int
}

func (s *windowed) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(time.Millisecond)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := now.Unix(); w != s.window {
		s.window, s.count = w, 0
	}
	toEnd := strconv.Itoa(int(time.Unix(s.window+1, 0).Sub(now).Seconds()) + 1)
	h, status := http.Header{}, http.StatusOK
	if s.count >= s.limit {
		status = http.StatusTooManyRequests
		s.refused++
		h.Set("Retry-After", toEnd)
	} else {
		s.count++
	}
	if s.publish {
		h.Set("X-RateLimit-Remaining", strconv.Itoa(s.limit-s.count))
		h.Set("X-RateLimit-Reset", toEnd)
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
}

// TestBypassLeavesNothingBehind: herds through a Transport's own gate,
// whose sends go by the bypass until a hold or a quota shuts it, leave no
// place taken, no user and no send in flight in the gate; once the scope's
// state is over, its sends go by the bypass again (a scope that publishes
// a quota has one, and stays shut), and the next herd is refused no more
// than the first.
func TestBypassLeavesNothingBehind(t *testing.T) {
	for _, tc := range []struct {
		workers, limit, total int
		publish               bool
	}{
		{2, 5, 30, false},
		{8, 20, 100, true},
		{16, 40, 200, false},
		{32, 25, 150, true},
	} {
		t.Run(fmt.Sprintf("%d workers, %d a second, publish %v", tc.workers, tc.limit, tc.publish), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &windowed{limit: tc.limit, publish: tc.publish}
				tr := New(srv, WithPolicy(Policy{MaxAttempts: 30}))
				herd := func() {
					jobs := make(chan int)
					var wg sync.WaitGroup
					for range tc.workers {
						wg.Go(func() {
							for range jobs {
								ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
								req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.test/", nil)
								require.NoError(t, err)
								resp, err := tr.RoundTrip(req)
								cancel()
								if assert.NoError(t, err) {
									assert.Equal(t, http.StatusOK, resp.StatusCode)
								}
							}
						})
					}
					for i := range tc.total {
						jobs <- i
					}
					close(jobs)
					wg.Wait()
				}
				herd()
				sl := tr.scopes["api.test"]
				require.NotNil(t, sl)
				if tc.publish {
					assert.True(t, sl.bypass.shut(), "the quota shut it")
				} else {
					assert.Positive(t, srv.refused, "the herd was refused: a hold shut the bypass")
				}
				assert.False(t, sl.bypass.taken(), "no place is left taken")
				assert.Zero(t, sl.users.Load(), "no user is left")
				if s := tr.own.scopes["api.test"]; s != nil {
					assert.Zero(t, s.inflight, "no send is left in flight in the gate")
				}
				refused := srv.refused
				// The state over (a quota's reset, a hold's end), one more
				// answer opens the bypass, and the next herd starts as the
				// first did.
				time.Sleep(2 * time.Second)
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test/", nil)
				require.NoError(t, err)
				_, err = tr.RoundTrip(req)
				require.NoError(t, err)
				// A scope that publishes a quota keeps one in the gate.
				assert.Equal(t, tc.publish, sl.bypass.shut(), "open once the gate keeps nothing of the scope")
				time.Sleep(2 * time.Second)
				srv.mu.Lock()
				srv.refused = 0
				srv.mu.Unlock()
				herd()
				assert.LessOrEqual(t, srv.refused, refused+tc.workers, "the second herd is refused no more than the first, give or take a send a worker")
				if tc.publish {
					assert.LessOrEqual(t, srv.refused, tc.workers, "a quota counted: only the first herd's sends in flight are refused")
				}
				assert.False(t, sl.bypass.taken())
				assert.Zero(t, sl.users.Load())
			})
		})
	}
}

// TestBypassPlacesOutAsItShutsAnswerToTheGate: calls whose sends went by
// the bypass, still out when another call's 429 shuts it, are counted in
// the gate as in flight, and tell it of their answers as they end: the
// gate is left with no send in flight, and the bypass opens again once
// the hold is over.
func TestBypassPlacesOutAsItShutsAnswerToTheGate(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					h, status := http.Header{}, http.StatusOK
					if r.URL.Path == "/throttle" {
						status = http.StatusTooManyRequests
						h.Set("Retry-After", "1")
					} else {
						<-release
					}
					return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
				})
				tr := New(inner, WithPolicy(Policy{MaxAttempts: 2, MaxWait: time.Millisecond}))
				send := func(path string) (*http.Response, error) {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test"+path, nil)
					require.NoError(t, err)
					return tr.RoundTrip(req)
				}
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						resp, err := send("/slow")
						if assert.NoError(t, err) {
							assert.Equal(t, http.StatusOK, resp.StatusCode)
						}
					})
				}
				synctest.Wait()
				sl := tr.scopes["api.test"]
				require.NotNil(t, sl)
				assert.Equal(t, int64(n), sl.bypass.w.Load(), "each call out holds a place")
				_, err := send("/throttle")
				var de *DeferredError
				require.ErrorAs(t, err, &de, "the hold does not fit MaxWait")
				assert.True(t, sl.bypass.shut())
				require.NotNil(t, tr.own.scopes["api.test"])
				assert.Equal(t, int64(n), tr.own.scopes["api.test"].inflight, "the places out are the gate's sends in flight")
				close(release)
				wg.Wait()
				assert.Zero(t, tr.own.scopes["api.test"].inflight, "each told the gate of its answer")
				assert.False(t, sl.bypass.taken())
				time.Sleep(time.Second)
				_, err = send("/slow2")
				require.NoError(t, err)
				assert.False(t, sl.bypass.shut(), "open once the hold is over")
			})
		})
	}
}
