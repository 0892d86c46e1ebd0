package heed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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
				if n == 1 {
					// Alone, the call is calm: nothing is registered till
					// another call of the scope counts it in (calm.go).
					assert.Nil(t, sl, "a lone call registers nothing")
				} else {
					require.NotNil(t, sl)
					assert.Equal(t, int64(n), sl.bypass.w.Load(), "each call out holds a place, the calm one's counted in")
				}
				_, err := send("/throttle")
				var de *DeferredError
				require.ErrorAs(t, err, &de, "the hold does not fit MaxWait")
				sl = tr.scopes["api.test"]
				require.NotNil(t, sl)
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

// TestBypassStaysShutUnderAHold: a 429 answered beside a few 200s of its
// scope, on real clocks and threads, round after round. A hold shuts the
// bypass and is set in the gate under one hold of the gate's lock
// (memGate.holdShut), so an answer between the two cannot find the scope
// idle and open the bypass under the hold (with the two apart, about 1 in
// 3,000 rounds did on 2 cores).
func TestBypassStaysShutUnderAHold(t *testing.T) {
	inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		h, status := http.Header{}, http.StatusOK
		if r.URL.Path == "/throttle" {
			status = http.StatusTooManyRequests
			h.Set("Retry-After", "5")
		}
		return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
	})
	const rounds = 20000
	for i := range rounds {
		tr := New(inner, WithPolicy(Policy{MaxAttempts: 1, MaxWait: time.Millisecond}))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, path := range []string{"/throttle", "/a", "/b", "/c"} {
			wg.Go(func() {
				<-start
				for range 3 {
					req, err := http.NewRequest(http.MethodGet, "https://api.test"+path, nil)
					if err != nil {
						panic(err)
					}
					_, _ = tr.RoundTrip(req)
					if path == "/throttle" {
						return
					}
				}
			})
		}
		close(start)
		wg.Wait()
		nb, err := tr.own.NotBefore(t.Context(), "api.test")
		require.NoError(t, err)
		if nb.After(time.Now()) && !tr.scopes["api.test"].bypass.shut() {
			t.Fatalf("round %d: the gate holds the scope until %v, and its bypass is open", i, nb)
		}
	}
}

// TestBypassPlaceAnsweredTakesNoQuota: a published quota shuts the bypass
// and counts every place taken in it as a send in flight, which the gate
// sets against the quota. A call holds its place from the moment it finds
// its scope until it ends: after its answer too (its observer told). Such
// a place, given back, gives back what was set against the quota for it
// (memGate.unsent).
//
// Call X is delivered, with no quota, and its observer is still busy; call
// Y's answer then says one send (or three) is left for a minute; the calls
// after, made when nothing of the scope is in flight, are those sends.
func TestBypassPlaceAnsweredTakesNoQuota(t *testing.T) {
	for _, tc := range []struct {
		name      string
		remaining string // the quota Y's answer publishes
		sendsLeft int    // the sends Z and those after it may make
	}{
		{"one left", "1", 1},
		{"three left", "3", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					h := http.Header{}
					if r.URL.Path != "/x" {
						h.Set("X-RateLimit-Remaining", tc.remaining)
						h.Set("X-RateLimit-Reset", "60")
					}
					return &http.Response{StatusCode: http.StatusOK, Header: h, Body: http.NoBody, Request: r}, nil
				})
				busy, free := make(chan struct{}), make(chan struct{})
				var once sync.Once
				observe := func(e Event) {
					if e.Kind == EventDelivered && e.URL == "https://api.test/x" {
						once.Do(func() {
							close(busy)
							<-free
						})
					}
				}
				tr := New(inner, WithPolicy(Policy{MaxAttempts: 1, MaxWait: time.Second}), WithObserver(observe))
				send := func(path string) (*http.Response, error) {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test"+path, nil)
					require.NoError(t, err)
					return tr.RoundTrip(req)
				}
				xDone := make(chan struct{})
				go func() {
					defer close(xDone)
					_, err := send("/x")
					assert.NoError(t, err)
				}()
				<-busy // X is answered; its observer is busy

				_, err := send("/y") // publishes the quota
				require.NoError(t, err)
				close(free)
				<-xDone // nothing of the scope is in flight now

				for i := range tc.sendsLeft {
					resp, err := send("/z")
					if assert.NoError(t, err, "send %d of %d the server said are left", i+1, tc.sendsLeft) {
						assert.Equal(t, http.StatusOK, resp.StatusCode)
					}
				}
			})
		})
	}
}

// TestBypassPacedPlacesTakeNoQuota: the same, for calls the adaptive
// limiter paces. After a herd's throttle the limiter paces the scope; once
// the hold is over the bypass opens again, and each new call takes its
// place as it finds its scope, then waits for its pacing token. The first
// of them answered publishes the quota, which counts the places of those
// still waiting; each gives its share back as it goes through the gate, so
// every call the server has a send for is sent (each answer says one fewer
// is left).
func TestBypassPacedPlacesTakeNoQuota(t *testing.T) {
	for _, k := range []int{2, 3} {
		t.Run(strconv.Itoa(k)+" calls paced", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				phase2, served := false, 0
				hold := make(chan struct{})
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					h, status := http.Header{}, http.StatusOK
					switch r.URL.Path {
					case "/herd-slow":
						<-hold
					case "/herd-throttle":
						status = http.StatusTooManyRequests
						h.Set("Retry-After-Ms", "800")
					default:
						mu.Lock()
						if phase2 {
							served++
							h.Set("X-RateLimit-Remaining", strconv.Itoa(k-served))
							h.Set("X-RateLimit-Reset", "60")
						}
						mu.Unlock()
					}
					return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
				})
				tr := New(inner, WithPolicy(Policy{MaxAttempts: 1, MaxWait: 2 * time.Second, MinWait: time.Millisecond}))
				send := func(path string) (*http.Response, error) {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test"+path, nil)
					require.NoError(t, err)
					return tr.RoundTrip(req)
				}
				// A herd's throttle, with another send in flight: the limiter paces.
				slow := make(chan struct{})
				go func() {
					defer close(slow)
					_, err := send("/herd-slow")
					assert.NoError(t, err)
				}()
				synctest.Wait()
				resp, err := send("/herd-throttle")
				require.NoError(t, err)
				require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
				close(hold)
				<-slow
				sl := tr.scopes["api.test"]
				require.True(t, sl.limiter.active.Load(), "the limiter paces the scope")
				time.Sleep(time.Second)  // the hold is over
				_, err = send("/reopen") // admitted by the gate: its answer opens the bypass again
				require.NoError(t, err)
				require.False(t, sl.bypass.shut(), "the bypass is open again")

				mu.Lock()
				phase2 = true
				mu.Unlock()
				var wg sync.WaitGroup
				errs := make([]error, k)
				for i := range k {
					wg.Go(func() {
						resp, err := send("/paced")
						errs[i] = err
						if err == nil {
							assert.Equal(t, http.StatusOK, resp.StatusCode)
						}
					})
				}
				wg.Wait()
				mu.Lock()
				assert.Equal(t, k, served, "each paced call was sent: the server had a send for each")
				mu.Unlock()
				for i, err := range errs {
					assert.NoError(t, err, "call %d", i)
				}
			})
		})
	}
}

// TestQuietSeesACallConverting: a call that gives its bypass place back
// (call.slow) counts as a user first, and the sweep's quiet reads places
// before users, so a conversion between its two reads is seen by one of
// them: quiet never answers true for a scope a call uses. A second
// goroutine converts each of many scopes' one place while quiet is asked
// of it over and over.
func TestQuietSeesACallConverting(t *testing.T) {
	for _, n := range []int{2000, 20000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			scopes := make([]scopeLocal, n)
			for i := range scopes {
				require.True(t, scopes[i].bypass.enter())
			}
			var watching atomic.Int64
			watching.Store(-1)
			go func() {
				for i := range scopes {
					for watching.Load() != int64(i) {
						runtime.Gosched()
					}
					c := &call{local: &scopes[i], fast: true}
					c.slow()
				}
			}()
			now := time.Now()
			wrong := 0
			for i := range scopes {
				sl := &scopes[i]
				watching.Store(int64(i))
				for sl.users.Load() == 0 {
					if sl.quiet(now) {
						wrong++
					}
				}
				if sl.quiet(now) {
					wrong++
				}
			}
			assert.Zero(t, wrong, "quiet answered true while a call used the scope")
		})
	}
}

// TestBypassSendsOutCountAgainstAQuota: calls whose sends are out by the
// bypass when a quota is first published are counted against it, as
// sends in flight always were: the quota's sends left are those it
// published less those out, and an answer that publishes nothing gives
// none back. The calls that would have to wait for the reset defer.
func TestBypassSendsOutCountAgainstAQuota(t *testing.T) {
	for _, tc := range []struct{ out, remaining int }{{1, 5}, {3, 5}, {4, 2}} {
		t.Run(fmt.Sprintf("%d out, %d left", tc.out, tc.remaining), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var mu sync.Mutex
				sent := 0
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					h := http.Header{}
					switch r.URL.Path {
					case "/slow":
						<-release
					case "/quota":
						h.Set("X-RateLimit-Remaining", strconv.Itoa(tc.remaining))
						h.Set("X-RateLimit-Reset", "60")
					default:
						mu.Lock()
						sent++
						mu.Unlock()
					}
					return &http.Response{StatusCode: http.StatusOK, Header: h, Body: http.NoBody, Request: r}, nil
				})
				tr := New(inner, WithPolicy(Policy{MaxAttempts: 1, MaxWait: time.Second}))
				send := func(path string) error {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test"+path, nil)
					require.NoError(t, err)
					_, err = tr.RoundTrip(req)
					return err
				}
				var wg sync.WaitGroup
				for range tc.out {
					wg.Go(func() { assert.NoError(t, send("/slow")) })
				}
				synctest.Wait()
				require.NoError(t, send("/quota"))
				close(release)
				wg.Wait()
				deferred := 0
				for range tc.remaining + tc.out {
					var de *DeferredError
					if err := send("/after"); errors.As(err, &de) {
						deferred++
					} else {
						require.NoError(t, err)
					}
				}
				left := max(tc.remaining-tc.out, 0)
				assert.Equal(t, left, sent, "the quota's sends less those out when it was published")
				assert.Equal(t, tc.remaining+tc.out-left, deferred)
			})
		})
	}
}
