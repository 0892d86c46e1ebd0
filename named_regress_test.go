package heed_test

// Regression tests of limits the server names (named.go): each failed on
// a first design that moved the whole call into the named scope.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

type namedRecorder struct {
	mu   sync.Mutex
	sent []string
	at   []time.Time
	h    func(r *http.Request) http.Header
}

func (a *namedRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.sent = append(a.sent, r.URL.Path)
	a.at = append(a.at, time.Now())
	a.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: a.h(r), Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// githubGet returns a GET of a path of api.github.com through tr, its
// response's body closed.
func githubGet(tr http.RoundTripper) func(path string) error {
	return func(path string) error {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "https://api.github.com"+path, nil)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
}

func githubNow(res string, rem int, reset time.Duration) http.Header {
	return http.Header{"X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Remaining": {strconv.Itoa(rem)},
		"X-Ratelimit-Reset": {strconv.FormatInt(time.Now().Add(reset).Unix(), 10)}, "X-Ratelimit-Resource": {res}}
}

// GitHub's core limit is spent (remaining 0, reset in an hour) once core
// is the scope's default resource (two shapes answered with it): a request
// to another repository, a shape never answered (no digit in owner/repo),
// is not sent. Before that, a new shape goes in the request scope alone.
func TestNamedSpentCoreHoldsNewRepositories(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		remaining := 4999
		api := &namedRecorder{h: func(*http.Request) http.Header {
			mu.Lock()
			defer mu.Unlock()
			return githubNow("core", remaining, time.Hour)
		}}
		tr := heed.New(api)
		do := githubGet(tr)
		require.NoError(t, do("/repos/a/x/issues"))
		require.NoError(t, do("/user"))
		mu.Lock()
		remaining = 0
		mu.Unlock()
		require.NoError(t, do("/repos/a/x/pulls"), "the last of core")
		api.sent = nil
		for _, p := range []string{"/repos/b/y/issues", "/repos/c/z/issues", "/orgs/o/members"} {
			var de *heed.DeferredError
			require.True(t, errors.As(do(p), &de), "%s while core is spent", p)
			assert.Zero(t, de.Attempts, "%s deferred at the gate", p)
		}
		assert.Empty(t, api.sent, "core spent for an hour")
	})
}

// Policy.Limit ("heed never exceeds it"): Rate 1/s. Two shapes learned as
// core and search, then three requests at one instant.
func TestNamedLimitStaysTheScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &namedRecorder{h: func(r *http.Request) http.Header {
			if strings.HasPrefix(r.URL.Path, "/search") {
				return githubNow("search", 29, time.Minute)
			}
			return githubNow("core", 4999, time.Hour)
		}}
		tr := heed.New(api, heed.WithPolicy(heed.Policy{Limit: heed.Limit{Rate: 1}}))
		do := func(p string) {
			req, _ := http.NewRequestWithContext(context.Background(), "GET", "https://api.github.com"+p, nil)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
		do("/repos/a/x/issues")
		do("/search/issues")
		time.Sleep(10 * time.Second)
		api.sent, api.at = nil, nil
		start := time.Now()
		do("/repos/a/x/issues")
		do("/search/issues")
		do("/users/u")
		t.Logf("sent %v at %v", api.sent, []time.Duration{api.at[0].Sub(start), api.at[1].Sub(start), api.at[2].Sub(start)})
		if api.at[2].Sub(start) < 2*time.Second {
			t.Errorf("Limit{Rate: 1} exceeded: 3 sends within %v", api.at[2].Sub(start))
		}
	})
}

type plainJSON struct{}

func (plainJSON) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: http.NoBody, Request: r}, nil
}

// A plain 2xx with none of the naming fields, to a host that never named a
// limit, costs allocations once any host named one.
func TestNamedCostsOtherScopesNothing(t *testing.T) {
	measure := func(learn bool) float64 {
		next := http.RoundTripper(plainJSON{})
		var mu sync.Mutex
		named := learn
		rt := heed.New(namedFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if named && r.URL.Host == "a.test" {
				return &http.Response{StatusCode: 200, Header: http.Header{"X-Ratelimit-Resource": {"core"}}, Body: http.NoBody, Request: r}, nil
			}
			return next.RoundTrip(r)
		}))
		if learn {
			req, _ := http.NewRequest("GET", "https://a.test/x/y", nil)
			rt.RoundTrip(req)
		}
		req, _ := http.NewRequest("GET", "https://b.test/repos/o/r/issues/123", nil)
		return testing.AllocsPerRun(1000, func() { resp, _ := rt.RoundTrip(req); resp.Body.Close() })
	}
	base, after := measure(false), measure(true)
	t.Logf("allocs per plain 2xx to b.test: fresh %.0f, after a.test named a limit %.0f", base, after)
	if after > base {
		t.Errorf("added allocations on the success path: %.0f -> %.0f", base, after)
	}
}

type namedFunc func(*http.Request) (*http.Response, error)

func (f namedFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Search is spent for a minute; a crawl of many repositories (each a shape
// of its own: no digit in owner/repo) pushes /search/issues out of the
// learned shapes, and the next search is sent inside the hold.
func TestNamedCrawlKeepsALiveHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &namedRecorder{h: func(r *http.Request) http.Header {
			if strings.HasPrefix(r.URL.Path, "/search") {
				return githubNow("search", 0, time.Minute)
			}
			return githubNow("core", 4999, time.Hour)
		}}
		tr := heed.New(api, heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		do := githubGet(tr)
		do("/search/issues") // served, spends search: held a minute
		if err := do("/search/issues"); err == nil {
			t.Fatal("expected the hold")
		}
		for i := 0; i < 20000; i++ {
			do("/repos/" + strings.Repeat(string(rune('a'+i%26)), 1+i/26%8) + "/r" + string(rune('a'+i/208%26)) + string(rune('a'+i/5408%26)))
		}
		api.sent = nil
		err := do("/search/issues")
		t.Logf("search after the crawl: err=%v sent=%v", err, api.sent)
		if len(api.sent) > 0 {
			t.Error("search sent inside its hold after its shape was evicted")
		}
	})
}

// A named send (Discord bucket) dialing while another send of the host gets
// Discord's global 429: it must not be written before the global hold ends.

// otherQuotaGate is a QuotaGate that is not heed's own, as redisgate is.
type otherQuotaGate struct{ heed.QuotaGate }

// wireAcross: A gets a 429 (Retry-After 2, answered at +80ms) naming
// Discord bucket abcd, or the global limit; B, of the same bucket, passed
// the gate at +1ms and is dialing until +250ms: it must not be written
// before +2.08s. named=false: the same with no naming fields. A nil gate
// is heed's own, where named limits are kept apart; with a gate given, the
// whole scope is held.
func wireAcross(t *testing.T, named, global bool, gate heed.Gate) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		written := map[string]time.Time{}
		phase := "warm1"
		rt := namedFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			ph := phase
			mu.Unlock()
			id := r.Header.Get("X-Id")
			if id == "B" {
				time.Sleep(250 * time.Millisecond)
				conn := &refusingConn{}
				if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.GotConn != nil {
					tr.GotConn(httptrace.GotConnInfo{Conn: conn})
				}
				if conn.refuses() {
					return nil, context.Canceled
				}
			}
			mu.Lock()
			written[id] = time.Now()
			mu.Unlock()
			h := http.Header{"X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset-After": {"1"}}
			if named {
				h.Set("X-Ratelimit-Bucket", "abcd")
				h.Set("X-Ratelimit-Scope", "user")
			}
			status := 200
			switch {
			case ph == "warm2":
				status = 429
				h.Set("Retry-After", "1")
			case id == "A" && global:
				time.Sleep(80 * time.Millisecond)
				status = 429
				h = http.Header{"Retry-After": {"2"}, "X-Ratelimit-Global": {"true"}, "X-Ratelimit-Scope": {"global"}}
			case id == "A":
				time.Sleep(80 * time.Millisecond)
				status = 429
				h.Set("Retry-After", "2")
				h.Set("X-Ratelimit-Remaining", "0")
			}
			return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
		})
		tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 1}), heed.WithGate(gate))
		do := func(id string) {
			req, _ := http.NewRequest("POST", "https://discord.test/api/v10/channels/1/messages", nil)
			req.Header.Set("X-Id", id)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
		do("w1")
		mu.Lock()
		phase = "warm2"
		mu.Unlock()
		do("w2")
		time.Sleep(1100 * time.Millisecond)
		mu.Lock()
		phase = "race"
		mu.Unlock()
		var wg sync.WaitGroup
		wg.Add(1)
		start := time.Now()
		go func() { defer wg.Done(); do("A") }()
		time.Sleep(time.Millisecond)
		do("B")
		wg.Wait()
		holdEnd := start.Add(80*time.Millisecond + 2*time.Second)
		wb, ok := written["B"]
		require.True(t, ok, "B is written once the hold ends")
		assert.False(t, wb.Before(holdEnd), "B written %v before the hold's end", holdEnd.Sub(wb))
	})
}

// TestNamedWireCheck: the wire check holds a dialing send to a hold
// learned meanwhile: a named limit's or the global one in heed's own gate,
// and the whole scope's in any kind of gate given.
func TestNamedWireCheck(t *testing.T) {
	for _, tc := range []struct {
		name          string
		named, global bool
		gate          func() heed.Gate
	}{
		{"heed's own gate, a bucket", true, false, func() heed.Gate { return nil }},
		{"heed's own gate, the global limit", true, true, func() heed.Gate { return nil }},
		{"a gate given, a bucket", true, false, func() heed.Gate { return heed.NewGate() }},
		{"another QuotaGate, a bucket", true, false, func() heed.Gate { return otherQuotaGate{heed.NewGate().(heed.QuotaGate)} }},
		{"another QuotaGate, nothing named", false, false, func() heed.Gate { return otherQuotaGate{heed.NewGate().(heed.QuotaGate)} }},
	} {
		t.Run(tc.name, func(t *testing.T) { wireAcross(t, tc.named, tc.global, tc.gate()) })
	}
}

// TestNamedManyTenantsKeepALiveHold: past 256 tenants (ScopeFor) whose
// servers name limits, the names of a tenant whose named limit holds are
// not forgotten to make room for others, whether the others use one shape
// or publish a quota kept an hour, with two.
func TestNamedManyTenantsKeepALiveHold(t *testing.T) {
	for _, tc := range []struct {
		tenants, calls int
	}{{2000, 1}, {300, 2}} {
		t.Run(strconv.Itoa(tc.tenants)+" tenants", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &namedRecorder{h: func(r *http.Request) http.Header {
					if strings.HasPrefix(r.URL.Path, "/search") {
						return githubNow("search", 0, time.Minute)
					}
					return githubNow("core", 4999, time.Hour)
				}}
				tr := heed.New(api, heed.WithPolicy(heed.Policy{MaxWait: time.Second,
					ScopeFor: func(r *http.Request) string { return r.Header.Get("X-Tenant") }}))
				do := func(tenant, path string) error {
					req, _ := http.NewRequest("GET", "https://api.github.com"+path, nil)
					req.Header.Set("X-Tenant", tenant)
					resp, err := tr.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					}
					return err
				}
				require.NoError(t, do("t0", "/search/issues")) // spends t0's search for a minute
				var de *heed.DeferredError
				require.True(t, errors.As(do("t0", "/search/issues"), &de), "the hold")
				for i := 1; i <= tc.tenants; i++ {
					for range tc.calls {
						_ = do("t"+strconv.Itoa(i), "/user")
					}
				}
				api.mu.Lock()
				api.sent = nil
				api.mu.Unlock()
				require.True(t, errors.As(do("t0", "/search/issues"), &de), "t0's search is still held")
				assert.Empty(t, api.sent)
			})
		})
	}
}

// Fleet: two Transports share a gate; T1 learns search is spent; T2,
// which learned no names, must not send search inside it. Named limits are
// kept apart only in a Transport's own gate, so the shared gate holds the
// whole scope.
func TestNamedSharedGateHoldsTheScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &namedRecorder{h: func(r *http.Request) http.Header {
			return githubNow("search", 0, time.Minute)
		}}
		g := heed.NewGate()
		t1 := heed.New(api, heed.WithGate(g), heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		t2 := heed.New(api, heed.WithGate(g), heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		githubGet(t1)("/search/issues")
		err1 := githubGet(t1)("/search/issues")
		api.sent = nil
		err := githubGet(t2)("/search/issues")
		t.Logf("T1 again: %v; T2: err=%v sent=%v", err1, err, api.sent)
		if len(api.sent) > 0 {
			t.Error("T2 sent search inside the spent search limit its shared gate holds")
		}
	})
}

// TestNamedRetryWaitsForTheLimitLearned: R1, the first search of a fresh
// Transport, gets no limit named (a 500 naming search, or a network error
// naming nothing) and backs off 10 s; meanwhile R2, sent in the limit
// learned, gets a 60 s hold. R1's retry must not go inside it.
func TestNamedRetryWaitsForTheLimitLearned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first func(r *http.Request) (*http.Response, error)
	}{
		{"a 500 naming search", func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 500, Header: githubNow("search", 5, time.Minute), Body: http.NoBody, Request: r}, nil
		}},
		{"no answer", func(*http.Request) (*http.Response, error) { return nil, errors.New("connection reset by peer") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var at []time.Duration
				start := time.Now()
				rt := namedFunc(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					defer mu.Unlock()
					at = append(at, time.Since(start))
					switch len(at) {
					case 1:
						return tc.first(r)
					case 2:
						h := githubNow("search", 5, time.Minute)
						h.Set("Retry-After", "60")
						return &http.Response{StatusCode: 429, Header: h, Body: http.NoBody, Request: r}, nil
					}
					return &http.Response{StatusCode: 200, Header: githubNow("search", 29, time.Minute), Body: http.NoBody, Request: r}, nil
				})
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxWait: 30 * time.Second, MaxAttempts: 3, Backoff: heed.Constant(10 * time.Second)}))
				do := githubGet(tr)
				var wg sync.WaitGroup
				var err1 error
				wg.Go(func() { err1 = do("/search/issues") }) // R1
				time.Sleep(time.Second)
				err2 := do("/search/issues") // R2
				wg.Wait()
				var de *heed.DeferredError
				require.True(t, errors.As(err2, &de), "R2 is held: %v", err2)
				require.True(t, errors.As(err1, &de), "R1's retry defers: %v", err1)
				assert.Equal(t, "cooling down", de.Reason)
				assert.Len(t, at, 2, "R1's retry not sent inside R2's hold: sends at %v", at)
			})
		})
	}
}

// R1 (slow) learns /search/issues -> search and gets a 60 s hold at +2s.
// R0 gets a 429 naming nothing: the whole scope is held until +5.5s.
// A (same shape, unknown when it entered passGate) waits out the scope hold
// in passGate's loop and is then admitted in the request scope, c.named
// never relooked: sent inside search's hold.
func TestNamedGateWaitRelearns(t *testing.T) {
	for _, wire := range []bool{false, true} {
		t.Run(strconv.FormatBool(wire), func(t *testing.T) { gateWaitCase(t, wire) })
	}
}

func gateWaitCase(t *testing.T, wire bool) {
	gateWaitSet(t, wire, 2*time.Second, "60", "5", 30*time.Second)
}

// The same past wireCheckFor: the scope is held 90 s (a 429 naming
// nothing), search for 10 min from +5s; A waits 90 s in passGate and is
// sent, the wire check no longer armed, even with GotConn.
func TestNamedGateWaitPastTheWireCheck(t *testing.T) {
	gateWaitSet(t, true, 5*time.Second, "600", "90", 5*time.Minute)
}

func gateWaitSet(t *testing.T, wire bool, r1 time.Duration, r1After, r0After string, maxWait time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var sent []string
		rt := namedFunc(func(r *http.Request) (*http.Response, error) {
			id := r.Header.Get("X-Id")
			if id == "A" && wire {
				conn := &refusingConn{}
				if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.GotConn != nil {
					tr.GotConn(httptrace.GotConnInfo{Conn: conn})
				} else {
					t.Log("A: no wire check")
				}
				if conn.refuses() {
					return nil, context.Canceled
				}
			}
			mu.Lock()
			sent = append(sent, id+"@"+time.Since(start).String())
			mu.Unlock()
			h := http.Header{}
			status := 200
			switch id {
			case "R1":
				time.Sleep(r1)
				h = githubNow("search", 5, time.Minute)
				h.Set("Retry-After", r1After)
				status = 429
			case "R0":
				h.Set("Retry-After", r0After)
				status = 429
			default:
				h = githubNow("search", 5, time.Minute)
			}
			return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
		})
		tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 1, MaxWait: maxWait}))
		do := func(id, path string) error {
			req, _ := http.NewRequest("GET", "https://api.github.com"+path, nil)
			req.Header.Set("X-Id", id)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		var wg sync.WaitGroup
		wg.Go(func() { do("R1", "/search/issues") })
		time.Sleep(500 * time.Millisecond)
		do("R0", "/user")
		time.Sleep(500 * time.Millisecond)
		err := do("A", "/search/issues")
		wg.Wait()
		t.Logf("sends %v; A err=%v", sent, err)
		for _, s := range sent {
			if strings.HasPrefix(s, "A@") {
				t.Errorf("A sent at %s, inside search's hold (set at +%v for %ss)", s, r1, r1After)

			}
		}
	})
}

// An answer naming nothing publishes a spent quota (remaining 0, reset in
// 60 s) in the request scope; a send of a shape known to be in a bucket
// ignores it (scopeHold reads the hold only). a3d2895 holds it.
func TestNamedSendWaitsForTheScopesSpentQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		rt := namedFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, r.URL.Path)
			mu.Unlock()
			h := http.Header{"X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"60"}, "X-Ratelimit-Bucket": {"abcd"}}
			if strings.HasPrefix(r.URL.Path, "/other") {
				h = http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"60"}}
			}
			return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
		})
		tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		do := func(path string) error {
			req, _ := http.NewRequest("GET", "https://x.test"+path, nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		do("/channels/1/messages") // learns the bucket
		do("/other")               // spends the host's quota for 60 s
		mu.Lock()
		sent = nil
		mu.Unlock()
		err1 := do("/other")
		err2 := do("/channels/1/messages")
		t.Logf("after the spent quota: /other err=%v; bucketed err=%v; sent=%v", err1, err2, sent)
		if len(sent) > 0 {
			t.Errorf("sent %v inside the scope's spent quota", sent)
		}
	})
}

// TestNamedDefaultStaysWhileItHolds: core is the elected default (2
// shapes) and is spent for an hour. Search calls admitted before it was
// spent (new shapes, in core) are answered after, naming search: their
// votes must not un-elect core while it holds, or a new repository's shape
// would be sent while core is spent.
func TestNamedDefaultStaysWhileItHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		remaining := 4999
		release := make(chan struct{})
		var sent []string
		rt := namedFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, r.URL.Path)
			mu.Unlock()
			var h http.Header
			if strings.HasPrefix(r.URL.Path, "/search") {
				<-release
				h = githubNow("search", 29, time.Minute)
			} else {
				mu.Lock()
				h = githubNow("core", remaining, time.Hour)
				mu.Unlock()
			}
			return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
		})
		tr := heed.New(rt)
		do := githubGet(tr)
		do("/repos/a/x/issues")
		do("/user") // core elected: 2 of 2
		var wg sync.WaitGroup
		for _, p := range []string{"/search/issues", "/search/repositories"} {
			wg.Go(func() { do(p) })
		}
		synctest.Wait() // both in flight, admitted in core
		mu.Lock()
		remaining = 0
		mu.Unlock()
		do("/user") // core spent for an hour
		close(release)
		wg.Wait() // core 2, search 2: no default
		mu.Lock()
		sent = nil
		mu.Unlock()
		err := do("/repos/b/y/issues")
		var de *heed.DeferredError
		require.True(t, errors.As(err, &de), "a new repository while core is spent: %v", err)
		assert.Zero(t, de.Attempts)
		assert.Empty(t, sent)
	})
}
