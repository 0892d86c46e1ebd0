package heed_test

// Named limits in shared gates: cases where a send could go into a named
// limit before the time the server gave, or be held far longer than
// needed.

import (
	"context"
	"errors"
	"io"
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
)

// fleetAPI records "METHOD path" of every request and answers with h.
type fleetAPI struct {
	mu     sync.Mutex
	sent   []string
	status func(r *http.Request) int
	h      func(r *http.Request) http.Header
}

func (a *fleetAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.sent = append(a.sent, r.Method+" "+r.URL.Path)
	a.mu.Unlock()
	status := 200
	if a.status != nil {
		status = a.status(r)
	}
	return &http.Response{StatusCode: status, Header: a.h(r), Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

func (a *fleetAPI) reset() {
	a.mu.Lock()
	a.sent = nil
	a.mu.Unlock()
}

func (a *fleetAPI) got() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.sent...)
}

func fleetDo(tr http.RoundTripper, host, method, path string) error {
	req, _ := http.NewRequestWithContext(context.Background(), method, "https://"+host+path, nil)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// TestNamedNewShapeWaitsForTheSpentDefault: core is the elected default and
// spent for an hour; one earlier POST /repos/a/x/code-scanning/sarifs was
// answered with another resource. A new POST /repos/... shape counts
// against the default, core, and is held: no guess from a neighbouring
// shape puts it in another limit.
func TestNamedNewShapeWaitsForTheSpentDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		remaining := 4999
		api := &fleetAPI{h: func(r *http.Request) http.Header {
			if strings.HasSuffix(r.URL.Path, "/code-scanning/sarifs") {
				return githubNow("code_scanning_upload", 499, time.Hour)
			}
			mu.Lock()
			defer mu.Unlock()
			return githubNow("core", remaining, time.Hour)
		}}
		tr := heed.New(api, heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		require.NoError(t, fleetDo(tr, "api.github.com", "GET", "/repos/a/x/issues"))
		require.NoError(t, fleetDo(tr, "api.github.com", "GET", "/user")) // core elected
		require.NoError(t, fleetDo(tr, "api.github.com", "POST", "/repos/a/x/code-scanning/sarifs"))
		mu.Lock()
		remaining = 0
		mu.Unlock()
		require.NoError(t, fleetDo(tr, "api.github.com", "GET", "/repos/a/x/pulls"), "the last of core")
		api.reset()
		err := fleetDo(tr, "api.github.com", "POST", "/repos/b/y/issues")
		var de *heed.DeferredError
		assert.True(t, errors.As(err, &de), "POST /repos/b/y/issues while core is spent: err=%v", err)
		assert.Empty(t, api.got(), "sent inside core's hold (reset in an hour)")
	})
}

// TestNamedFleetNewShapeReadsTheNames: Discord, one NewGate shared by A
// and B. B has learned one route; A gets a 429 on the pins bucket and
// shares the name. B's first pins call, a shape new to B, is held by the
// marks, reads the names A shared, and waits in the pins bucket.
func TestNamedFleetNewShapeReadsTheNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fleetAPI{
			status: func(r *http.Request) int {
				if strings.HasSuffix(r.URL.Path, "/pins") {
					return http.StatusTooManyRequests
				}
				return 200
			},
			h: func(r *http.Request) http.Header {
				h := http.Header{"X-Ratelimit-Limit": {"5"}, "X-Ratelimit-Scope": {"user"}}
				switch {
				case strings.HasSuffix(r.URL.Path, "/pins"):
					h.Set("X-Ratelimit-Bucket", "pins")
					h.Set("X-Ratelimit-Remaining", "0")
					h.Set("X-Ratelimit-Reset-After", "30.000")
					h.Set("Retry-After", "30")
				case strings.HasPrefix(r.URL.Path, "/users/"):
					h.Set("X-Ratelimit-Bucket", "me")
					h.Set("X-Ratelimit-Remaining", "4")
					h.Set("X-Ratelimit-Reset-After", "1.000")
				}
				return h
			}}
		g := heed.NewGate()
		policy := heed.WithPolicy(heed.Policy{MaxWait: time.Second, MaxAttempts: 1})
		a := heed.New(api, heed.WithGate(g), policy)
		b := heed.New(api, heed.WithGate(g), policy)
		require.NoError(t, fleetDo(b, "discord.com", "GET", "/users/@me"))
		require.NoError(t, fleetDo(a, "discord.com", "GET", "/channels/1/pins")) // 429, 30 s
		api.reset()
		err := fleetDo(b, "discord.com", "GET", "/channels/1/pins")
		t.Logf("B: err=%v sent=%v", err, api.got())
		assert.Empty(t, api.got(), "B sent into bucket pins, which A's 429 holds for 30 s")
	})
}

// TestNamedFleetDefaultsDoNotUnheldShapes: GitHub, one NewGate shared by
// A, C and B. A learns two core shapes, C two search shapes (their votes
// tie), then A spends core. B, fresh, calls a shape A learned as core: it
// reads the shape's name, not a default, and is held in core.
func TestNamedFleetDefaultsDoNotUnheldShapes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		remaining := 4999
		api := &fleetAPI{h: func(r *http.Request) http.Header {
			if strings.HasPrefix(r.URL.Path, "/search/") {
				return githubNow("search", 29, time.Minute)
			}
			mu.Lock()
			defer mu.Unlock()
			return githubNow("core", remaining, time.Hour)
		}}
		g := heed.NewGate()
		policy := heed.WithPolicy(heed.Policy{MaxWait: time.Second})
		a := heed.New(api, heed.WithGate(g), policy)
		c := heed.New(api, heed.WithGate(g), policy)
		b := heed.New(api, heed.WithGate(g), policy)
		require.NoError(t, fleetDo(a, "api.github.com", "GET", "/repos/a/x/issues"))
		require.NoError(t, fleetDo(a, "api.github.com", "GET", "/user"))
		require.NoError(t, fleetDo(c, "api.github.com", "GET", "/search/issues"))
		require.NoError(t, fleetDo(c, "api.github.com", "GET", "/search/repositories"))
		mu.Lock()
		remaining = 0
		mu.Unlock()
		require.NoError(t, fleetDo(a, "api.github.com", "GET", "/repos/a/x/issues"), "the last of core")
		api.reset()
		err := fleetDo(b, "api.github.com", "GET", "/repos/a/x/issues")
		t.Logf("B: err=%v sent=%v", err, api.got())
		assert.Empty(t, api.got(), "B sent a core shape inside core's hold (reset in an hour)")
	})
}

// TestNamedFleetNewRouteIsNotStarved: Discord, one NewGate shared by A and
// fresh Transports. A learns one route, then sends every 500 ms over 8
// channels in turn, each answered spent for 2 s: some named limit of the
// scope always holds, so the scope is marked without a gap, for 20 min.
// A fresh Transport calling a route no one called, at 1 min and at 11 min
// (past rules.PaceKeep, so the names kept were written again meanwhile),
// reads the names, finds none for it, and sends it at once: held by the
// marks, it would wait until A stops.
func TestNamedFleetNewRouteIsNotStarved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fleetAPI{h: func(r *http.Request) http.Header {
			h := http.Header{"X-Ratelimit-Limit": {"5"}, "X-Ratelimit-Scope": {"user"}}
			if strings.HasPrefix(r.URL.Path, "/channels/") {
				h.Set("X-Ratelimit-Bucket", "msgs")
				h.Set("X-Ratelimit-Remaining", "0")
				h.Set("X-Ratelimit-Reset", strconv.FormatFloat(float64(time.Now().Add(2*time.Second).UnixMilli())/1000, 'f', 3, 64))
				h.Set("X-Ratelimit-Reset-After", "2.000")
			} else {
				h.Set("X-Ratelimit-Bucket", "roles")
				h.Set("X-Ratelimit-Remaining", "4")
				h.Set("X-Ratelimit-Reset", strconv.FormatFloat(float64(time.Now().Add(2*time.Second).UnixMilli())/1000, 'f', 3, 64))
				h.Set("X-Ratelimit-Reset-After", "2.000")
			}
			return h
		}}
		g := heed.NewGate()
		policy := heed.WithPolicy(heed.Policy{MaxWait: time.Hour})
		a := heed.New(api, heed.WithGate(g), policy)
		start := time.Now()
		stop := start.Add(20 * time.Minute)
		var wg sync.WaitGroup
		wg.Go(func() {
			// A busy bot: a send every 500 ms, over 8 channels in turn,
			// each of which it finds spent for 2 s; none waits.
			for i := 0; time.Now().Before(stop); i++ {
				_ = fleetDo(a, "discord.com", "GET", "/channels/"+strconv.Itoa(1+i%8)+"/messages")
				time.Sleep(500 * time.Millisecond)
			}
		})
		fresh := func(at time.Duration) time.Duration {
			time.Sleep(time.Until(start.Add(at)))
			waits := 0
			tr := heed.New(api, heed.WithGate(g), policy, heed.WithObserver(func(e heed.Event) {
				if e.Kind == heed.EventGateWait {
					waits++
				}
			}))
			t0 := time.Now()
			err := fleetDo(tr, "discord.com", "GET", "/guilds/9/roles")
			require.NoError(t, err)
			t.Logf("fresh Transport at %v: sent after %v, %d waits at the gate", at, time.Since(t0), waits)
			return time.Since(t0)
		}
		early := fresh(time.Minute)
		late := fresh(11 * time.Minute)
		t.Logf("a route never called, from a fresh Transport: at 1 min sent after %v; at 11 min sent after %v", early, late)
		assert.Less(t, early, 5*time.Second)
		assert.Less(t, late, 5*time.Second, "starved while other named limits hold one after another")
		wg.Wait()
	})
}

// TestNamedFleetSlotRecheckReadsTheMarks: one NewGate shared by A and B;
// B has Limit{InFlight: 1} and knows no names. B's second call passes the
// gate (nothing held yet) and waits for B's slot; meanwhile A's search
// gets a 429 naming search, Retry-After 60 s. When B's slot frees, the
// recheck reads the marks as the gate's take does, and B waits.
func TestNamedFleetSlotRecheckReadsTheMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var searchAt []time.Time
		rt := namedFunc(func(r *http.Request) (*http.Response, error) {
			h, status := http.Header{}, 200
			switch {
			case r.URL.Path == "/slow":
				<-release
			case strings.HasPrefix(r.URL.Path, "/search/"):
				mu.Lock()
				searchAt = append(searchAt, time.Now())
				first := len(searchAt) == 1
				mu.Unlock()
				if first {
					status = http.StatusTooManyRequests
					h = githubNow("search", 0, time.Minute)
					h.Set("Retry-After", "60")
				} else {
					h = githubNow("search", 29, time.Minute)
				}
			}
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
		})
		g := heed.NewGate()
		a := heed.New(rt, heed.WithGate(g), heed.WithPolicy(heed.Policy{MaxWait: time.Second, MaxAttempts: 1}))
		b := heed.New(rt, heed.WithGate(g), heed.WithPolicy(heed.Policy{MaxWait: 2 * time.Minute, Limit: heed.Limit{InFlight: 1}}))
		var wg sync.WaitGroup
		wg.Go(func() { _ = githubGet(b)("/slow") })
		synctest.Wait()
		wg.Go(func() { _ = githubGet(b)("/search/issues") })
		synctest.Wait() // past the gate, waiting for B's slot
		start := time.Now()
		_ = githubGet(a)("/search/issues") // 429: search held 60 s
		time.Sleep(10 * time.Millisecond)
		close(release)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, searchAt, 2)
		t.Logf("B's search sent %v after A's 429 (Retry-After 60)", searchAt[1].Sub(start))
		assert.GreaterOrEqual(t, searchAt[1].Sub(start), 59*time.Second, "B sent inside search's hold")
	})
}
