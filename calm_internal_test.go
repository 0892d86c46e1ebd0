package heed

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slotsMarked counts the sightings' slots that are marked.
func slotsMarked(tr *Transport) int {
	n := 0
	for i := range tr.sights.slots {
		if tr.sights.slots[i].Load() != 0 {
			n++
		}
	}
	return n
}

// TestCalmCallsKeepNothing: calls alone in their scope whose answers leave
// nothing to keep register no scope, however many hosts they go to, and
// leave no slot marked; a call whose answer leaves something, or whose
// policy or gate rules the calm path out, registers its scope as before.
func TestCalmCallsKeepNothing(t *testing.T) {
	tests := []struct {
		name   string
		host   string // prefix: answering's rules
		hosts  int
		each   int
		policy Policy
		shared bool // a gate given: not heed's own
		want   int  // scopes registered
	}{
		{"one host, called one call at a time", "api", 1, 50, Policy{}, false, 0},
		{"a thousand hosts, once each", "h", 1000, 1, Policy{}, false, 0},
		{"forty hosts, five calls each", "h", 40, 5, Policy{}, false, 0},
		{"a budget with a floor of its own", "h", 5, 3, Policy{Budget: Budget{MinPerSecond: 2, Ratio: 0.5}}, false, 0},
		{"no budget", "h", 5, 3, Policy{Budget: Budget{Disabled: true}}, false, 0},
		{"a 404: terminal, nothing to keep", "missing", 7, 2, Policy{}, false, 0},
		{"a published quota registers its scope", "quota", 3, 2, Policy{}, false, 3},
		{"a 429 registers its scope", "throttled", 4, 1, Policy{MaxAttempts: 1}, false, 4},
		{"a budget with no floor: never calm", "h", 6, 2, Policy{Budget: Budget{MinPerSecond: -1}}, false, 6},
		{"a Limit: never calm", "h", 3, 2, Policy{Limit: Limit{Rate: 1000, Burst: 100}}, false, 3},
		{"a gate given: never calm", "h", 4, 1, Policy{}, true, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := answering(nil)
				if tt.host == "missing" {
					inner = roundTripperFunc(func(r *http.Request) (*http.Response, error) {
						return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
					})
				}
				opts := []Option{WithPolicy(tt.policy)}
				if tt.shared {
					opts = append(opts, WithGate(NewGate()))
				}
				tr := New(inner, opts...)
				for range tt.each {
					for i := range tt.hosts {
						req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+tt.host+strconv.Itoa(i)+".test/x", nil)
						require.NoError(t, err)
						resp, err := tr.RoundTrip(req)
						var de *DeferredError
						if errors.As(err, &de) {
							continue // a 429's hold, deferred
						}
						require.NoError(t, err)
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
				tr.scopesMu.RLock()
				defer tr.scopesMu.RUnlock()
				assert.Len(t, tr.scopes, tt.want, "the scopes registered")
				assert.Equal(t, int64(tt.want), tr.live.Load(), "the scopes counted")
				assertCalmScopeEmpty(t)
				assert.Zero(t, slotsMarked(tr), "no calm call is out")
				for k, sl := range tr.scopes {
					assert.False(t, sl.bypass.taken(), k)
					assert.Zero(t, sl.users.Load(), k)
					assert.Zero(t, sl.limiter.flight.load(), k)
				}
			})
		})
	}
}

// TestCalmCallIsCountedByTheNext: a calm call out when others of its scope
// come is counted in the scope the first of them registers: its place in
// the bypass and its send in flight, so that the later sends are a herd
// forming, checked at the wire. All give back what they held, whichever
// answers first.
func TestCalmCallIsCountedByTheNext(t *testing.T) {
	for _, later := range []int{1, 3, 6} {
		for _, calmFirst := range []bool{true, false} {
			t.Run(strconv.Itoa(later)+" later, calm answered first "+strconv.FormatBool(calmFirst), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					releases := map[string]chan struct{}{}
					var mu sync.Mutex
					traced := map[string]bool{}
					for i := range later + 1 {
						releases["/"+strconv.Itoa(i)] = make(chan struct{})
					}
					inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
						mu.Lock()
						traced[r.URL.Path] = httptrace.ContextClientTrace(r.Context()) != nil
						mu.Unlock()
						<-releases[r.URL.Path]
						return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
					})
					tr := New(inner)
					var wg sync.WaitGroup
					send := func(i int) {
						wg.Go(func() {
							req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test/"+strconv.Itoa(i), nil)
							require.NoError(t, err)
							resp, err := tr.RoundTrip(req)
							if assert.NoError(t, err) {
								assert.Equal(t, http.StatusOK, resp.StatusCode)
							}
						})
						synctest.Wait()
					}
					send(0)
					assert.Empty(t, tr.scopes, "alone, the call registers nothing")
					assert.Equal(t, 1, slotsMarked(tr))
					for i := 1; i <= later; i++ {
						send(i)
					}
					sl := tr.scopes["api.test"]
					require.NotNil(t, sl)
					assert.Equal(t, int64(later+1), sl.bypass.w.Load(), "every call out holds a place, the calm one's counted in")
					assert.Equal(t, int64(later+1), sl.limiter.flight.load(), "every send is in flight, the calm one's counted in")
					assert.False(t, traced["/0"], "the calm call's send was alone")
					assert.True(t, traced["/1"], "the next one's is a herd forming: checked at the wire")
					order := []int{0}
					for i := 1; i <= later; i++ {
						order = append(order, i)
					}
					if !calmFirst {
						order = append(order[1:], 0)
					}
					for _, i := range order {
						close(releases["/"+strconv.Itoa(i)])
						synctest.Wait()
					}
					wg.Wait()
					assert.False(t, sl.bypass.taken(), "no place is left")
					assert.Zero(t, sl.users.Load())
					assert.Zero(t, sl.limiter.flight.load(), "nothing is left in flight")
					assert.Zero(t, slotsMarked(tr), "the calm call's slot is freed")
				})
			})
		}
	}
}

// TestCalmCallThrottledHoldsItsScope: a calm call's 429 registers its scope
// and holds it for the hint: the next call waits it out, never sending
// before it ends, or defers when it cannot.
func TestCalmCallThrottledHoldsItsScope(t *testing.T) {
	for _, hint := range []int{1, 3} {
		t.Run(strconv.Itoa(hint)+"s", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var sends []time.Time
				refused := false
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					defer mu.Unlock()
					sends = append(sends, time.Now())
					if !refused {
						refused = true
						h := http.Header{}
						h.Set("Retry-After", strconv.Itoa(hint))
						return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: r}, nil
					}
					return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
				})
				tr := New(inner, WithPolicy(Policy{MaxAttempts: 1}))
				get := func(ctx context.Context) (*http.Response, error) {
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.test/x", nil)
					require.NoError(t, err)
					return tr.RoundTrip(req)
				}
				start := time.Now()
				resp, err := get(t.Context())
				require.NoError(t, err)
				assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
				require.NotNil(t, tr.scopes["api.test"], "the 429 registered the scope")
				short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
				defer cancel()
				_, err = get(short)
				var de *DeferredError
				require.ErrorAs(t, err, &de, "the hold does not fit")
				assert.False(t, de.RetryAt.Before(start.Add(time.Duration(hint)*time.Second)), "eligible at the hint's end")
				resp, err = get(t.Context())
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				require.Len(t, sends, 2, "the deferred call sent nothing")
				assert.False(t, sends[1].Before(start.Add(time.Duration(hint)*time.Second)), "never before the hint's end")
			})
		})
	}
}

// calmCall is a call to scope through tr as RoundTrip starts one, up to
// finding its scope.
func calmCall(t *testing.T, tr *Transport, scope string) *call {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+scope+"/x", nil)
	require.NoError(t, err)
	start, mono := tr.times.now()
	c := &call{transport: tr, policy: tr.fallbackPolicy, req: req, ctx: req.Context(), scope: scope, started: start, startMono: mono}
	c.shape.req = req
	tr.scope(c, c.policy)
	return c
}

// TestCalmCallJoins: a calm call counted in by another call of its scope
// joins the scope at its next step: admitted there before it sends, with
// its send not counted in flight till it goes, or giving back its place
// and send as it ends unsent. Nothing is left held either way.
func TestCalmCallJoins(t *testing.T) {
	for _, step := range []string{"admission", "end"} {
		for _, others := range []int{1, 2, 5} {
			t.Run(step+", "+strconv.Itoa(others)+" others", func(t *testing.T) {
				tr := New(answering(nil))
				c := calmCall(t, tr, "api.test")
				require.True(t, c.lent, "alone: calm")
				var cs []*call
				for range others {
					o := calmCall(t, tr, "api.test")
					assert.False(t, o.lent, "not alone: registered")
					cs = append(cs, o)
				}
				sl := tr.scopes["api.test"]
				require.NotNil(t, sl)
				assert.Equal(t, int64(others+1), sl.bypass.w.Load(), "the calm call's place is counted in")
				assert.Equal(t, int64(1), sl.limiter.flight.load(), "and its send")
				if step == "admission" {
					_, err := c.passGate(1, time.Now())
					require.NoError(t, err)
					assert.False(t, c.lent)
					assert.Same(t, sl, c.local, "joined")
					assert.True(t, c.taken && c.bypassed && c.fast, "admitted by the bypass, in its place")
					assert.Zero(t, sl.limiter.flight.load(), "not sent yet: not in flight")
				}
				c.end()
				for _, o := range cs {
					o.end()
				}
				assert.False(t, sl.bypass.taken(), "no place is left")
				assert.Zero(t, sl.users.Load())
				assert.Zero(t, sl.limiter.flight.load())
				assert.Zero(t, slotsMarked(tr))
			})
		}
	}
}

// TestCalmCallRacedStaysOff: a scope registered between a call's look for
// it and its mark is never gone around: the call leaves the calm path.
func TestCalmCallRacedStaysOff(t *testing.T) {
	tr := New(answering(nil))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test/x", nil)
	require.NoError(t, err)
	c := &call{transport: tr, policy: tr.fallbackPolicy, req: req, ctx: req.Context(), scope: "api.test"}
	assert.False(t, tr.calmEnter(c, tr.registered.Load()+1), "a registration meanwhile")
	assert.Zero(t, slotsMarked(tr), "the mark is taken back")
	assert.Nil(t, c.local)
}

// TestCalmAndRegisteredCallsBalance: calls of a few scopes from many
// goroutines, on real clocks and threads, some throttled for a
// millisecond, others cut short by their context: at the end, every scope
// registered holds no place, user or send, its gate state no send in
// flight, and no slot is marked.
func TestCalmAndRegisteredCallsBalance(t *testing.T) {
	for _, c := range []struct{ workers, scopes, each int }{{2, 1, 200}, {8, 3, 100}, {16, 40, 30}} {
		t.Run(strconv.Itoa(c.workers)+"x"+strconv.Itoa(c.scopes), func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1)%7 == 0 {
					w.Header().Set("Retry-After-Ms", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				w.WriteHeader(http.StatusOK)
			}))
			defer srv.Close()
			// Scoped by path: every scope goes to the one server.
			scopeFor := func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/") }
			tr := New(srv.Client().Transport, WithPolicy(Policy{MaxAttempts: 3, MaxWait: 50 * time.Millisecond, ScopeFor: scopeFor}))
			defer tr.CloseIdleConnections()
			var wg sync.WaitGroup
			for w := range c.workers {
				wg.Go(func() {
					for i := range c.each {
						ctx, cancel := context.WithCancel(t.Context())
						if i%11 == 0 {
							cancel() // cut short, at any step
						}
						host := "s" + strconv.Itoa((w+i)%c.scopes) + ".test"
						req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/"+host, nil)
						require.NoError(t, err)
						resp, err := tr.RoundTrip(req)
						if err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
						cancel()
					}
				})
			}
			wg.Wait()
			assertNothingHeld(t, tr)
		})
	}
}

// assertNothingHeld fails unless, every call of tr over, no slot is marked,
// no scope registered holds a place, a user or a send in flight, and the
// gate counts no send in flight.
func assertNothingHeld(t *testing.T, tr *Transport) {
	t.Helper()
	assert.Zero(t, slotsMarked(tr), "no slot is left marked")
	tr.scopesMu.RLock()
	defer tr.scopesMu.RUnlock()
	for k, sl := range tr.scopes {
		assert.False(t, sl.bypass.taken(), "place left in %s: %x", k, sl.bypass.w.Load())
		assert.Zero(t, sl.users.Load(), "users left in %s", k)
		assert.Zero(t, sl.limiter.flight.load(), "flight left in %s", k)
	}
	tr.own.mu.Lock()
	defer tr.own.mu.Unlock()
	for k, s := range tr.own.scopes {
		assert.Zero(t, s.inflight, "gate inflight left in %q", k)
	}
}

// failAgain gives req, whose body is "hello", a GetBody that fails after
// its first call.
func failAgain(req *http.Request) {
	n := 0
	req.GetBody = func() (io.ReadCloser, error) {
		n++
		if n > 1 {
			return nil, errors.New("no body again")
		}
		return io.NopCloser(strings.NewReader("hello")), nil
	}
}

// tryRoundTrip sends req through tr, a panic recovered, and drains and
// closes the body of the response, if any.
func tryRoundTrip(tr *Transport, req *http.Request) {
	defer func() { _ = recover() }()
	resp, err := tr.RoundTrip(req)
	if err == nil && resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// assertCalmScopeEmpty fails unless calmScope, which every calm call goes
// on, is as empty as it was: no call wrote to it.
func assertCalmScopeEmpty(t *testing.T) {
	t.Helper()
	assert.True(t, reflect.DeepEqual(&calmScope, new(scopeLocal)), "calmScope was written to")
}

// TestCalmScopeStaysEmpty: calm calls of every kind, told to an observer
// and a logger, answered with every kind of answer, some panicking or cut
// short, leave the scope they all go on as empty as it was.
func TestCalmScopeStaysEmpty(t *testing.T) {
	answers := []func(h http.Header) int{
		func(http.Header) int { return http.StatusOK },
		func(http.Header) int { return http.StatusNotFound },
		func(http.Header) int { return http.StatusServiceUnavailable },
		func(h http.Header) int { h.Set("Retry-After-Ms", "1"); return http.StatusTooManyRequests },
		func(h http.Header) int {
			h.Set("X-RateLimit-Remaining", "3")
			h.Set("X-RateLimit-Reset", "1")
			return http.StatusOK
		},
		func(h http.Header) int { h.Set("X-Ratelimit-Resource", "core"); return http.StatusOK },
		func(h http.Header) int { h.Set(roomField, "5/40"); return http.StatusOK },
		func(http.Header) int { panic("the inner transport panics") },
	}
	for _, heard := range []bool{false, true} {
		t.Run("heard "+strconv.FormatBool(heard), func(t *testing.T) {
			var n atomic.Int64
			inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				h := http.Header{}
				status := answers[int(n.Add(1))%len(answers)](h)
				return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
			})
			opts := []Option{WithPolicy(Policy{MaxAttempts: 2, MaxWait: 10 * time.Millisecond, MinWait: time.Millisecond,
				Backoff: EqualJitter(time.Millisecond, time.Millisecond)})}
			if heard {
				opts = append(opts, WithObserver(func(Event) {}), WithSlog(slog.New(slog.DiscardHandler)))
			}
			tr := New(inner, opts...)
			for i := range 400 {
				ctx, cancel := context.WithCancel(t.Context())
				if i%13 == 0 {
					cancel()
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://h"+strconv.Itoa(i)+".test/x", nil)
				require.NoError(t, err)
				func() {
					defer func() { _ = recover() }()
					if resp, err := tr.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
				}()
				cancel()
			}
			assertCalmScopeEmpty(t)
			assert.Zero(t, slotsMarked(tr))
		})
	}
}

// TestCalmSlotSharedTakesTurns: two scopes whose hashes share a slot take
// turns on the calm path: while one's calm call is out, a call of the
// other registers its scope, as every call did before the calm path, and
// neither is counted in the other's.
func TestCalmSlotSharedTakesTurns(t *testing.T) {
	for _, second := range []int{1, 3} {
		t.Run(strconv.Itoa(second)+" calls of the other scope", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					if r.URL.Path == "/wait" {
						<-release
					}
					return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
				})
				tr := New(inner)
				// Two scopes of one slot.
				slots := map[*atomic.Uint64]string{}
				var a, b string
				for i := 0; b == ""; i++ {
					s := "h" + strconv.Itoa(i) + ".test"
					slot := tr.sights.slot(tr.sights.tag(s))
					if o, ok := slots[slot]; ok {
						a, b = o, s
					}
					slots[slot] = s
				}
				get := func(host, path string) {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+host+path, nil)
					require.NoError(t, err)
					resp, err := tr.RoundTrip(req)
					if assert.NoError(t, err) {
						resp.Body.Close()
					}
				}
				var wg sync.WaitGroup
				wg.Go(func() { get(a, "/wait") })
				synctest.Wait()
				require.Equal(t, 1, slotsMarked(tr), "a's call is calm")
				for range second {
					get(b, "/now")
				}
				assert.NotNil(t, tr.scopes[b], "b, its slot taken, registers")
				assert.Nil(t, tr.scopes[a], "a's call stays calm, counted in nowhere")
				close(release)
				wg.Wait()
				assert.Nil(t, tr.scopes[a])
				assertNothingHeld(t, tr)
				assertCalmScopeEmpty(t)
			})
		})
	}
}
