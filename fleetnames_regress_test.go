package heed_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// githubish answers as GitHub does with search spent: /search/* is
// search (403, none left, reset in a minute), everything else core with
// plenty left. It counts the searches that reached it.
type githubish struct {
	mu       sync.Mutex
	searches int
}

func (a *githubish) RoundTrip(r *http.Request) (*http.Response, error) {
	h := github("core", 4000, time.Hour)(time.Now())
	status := 200
	if strings.HasPrefix(r.URL.Path, "/search/") {
		a.mu.Lock()
		a.searches++
		a.mu.Unlock()
		h = github("search", 0, time.Minute)(time.Now())
		status = 403
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// ghDo sends a GET of path to api.github.com through tr, and reads the
// body of its answer.
func ghDo(t *testing.T, tr http.RoundTripper, path string) error {
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.github.com"+path, nil))
	if err == nil {
		readBody(t, resp)
	}
	return err
}

// TestFleetNamesOfALongPath: a shape longer than the fleet's names keep
// (a long contents path), known to one Transport, is left out of them, and
// the rest is kept: a Transport that has seen nothing is held by the spent
// search limit.
func TestFleetNamesOfALongPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &githubish{}
		gate := heed.NewGate()
		pol := heed.WithPolicy(heed.Policy{MaxWait: time.Second})
		t1 := heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, ghDo(t, t1, "/repos/o/r"))
		require.NoError(t, ghDo(t, t1, "/user"))
		var de *heed.DeferredError
		require.ErrorAs(t, ghDo(t, t1, "/search/issues"), &de) // search spent, held in the gate
		require.Equal(t, 1, api.searches)

		t2 := heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, ghDo(t, t2, "/repos/o/r/contents/"+strings.Repeat("a", 2100)))

		t3 := heed.New(api, heed.WithGate(gate), pol) // has seen nothing
		err := ghDo(t, t3, "/search/issues")
		assert.True(t, errors.As(err, &de) && de.Attempts == 0, "held at the gate: %v", err)
		assert.Equal(t, 1, api.searches, "a search reached the spent limit")
	})
}

// discordish answers each request with the status and header answer(r)
// gives, and records the requests.
type discordish struct {
	mu     sync.Mutex
	answer func(r *http.Request) (int, http.Header)
	got    []string
}

func (a *discordish) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, r.Method+" "+r.URL.Path)
	status, h := a.answer(r)
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// TestFleetNamesTakeTheLaterName: a shape whose name changes (Discord
// counts deleting an old message in a bucket of its own) takes the name
// learned later, in the fleet's names and in a Transport that took the old
// one from them: neither it nor a Transport that has seen nothing sends
// into the new bucket's hold, and the old name is not written back.
func TestFleetNamesTakeTheLaterName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bucket, remaining := "aaaa", 4
		api := &discordish{answer: func(r *http.Request) (int, http.Header) {
			if r.Method == "GET" {
				return 200, discord("efgh", 9, 10*time.Second, false)(time.Now())
			}
			if remaining == 0 {
				return 429, discord(bucket, 0, 30*time.Second, false)(time.Now())
			}
			return 200, discord(bucket, remaining, 5*time.Second, false)(time.Now())
		}}
		gate := heed.NewGate()
		pol := heed.WithPolicy(heed.Policy{MaxWait: time.Second})
		do := func(tr http.RoundTripper, method, path string) error {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), method, "https://discord.com/api/v10"+path, nil))
			if err == nil {
				readBody(t, resp)
			}
			return err
		}
		t1 := heed.New(api, heed.WithGate(gate), pol)
		t2 := heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, do(t1, "DELETE", "/channels/1/messages/2"))
		require.NoError(t, do(t2, "GET", "/guilds/9/members")) // t2 merges: DELETE shape -> aaaa
		bucket, remaining = "bbbb", 0
		var de *heed.DeferredError
		require.ErrorAs(t, do(t1, "DELETE", "/channels/1/messages/3"), &de) // t1 learns bbbb, held 30 s
		time.Sleep(2 * time.Second)
		require.NoError(t, do(t2, "GET", "/guilds/9/members")) // t2's merge writes aaaa back over bbbb
		t3 := heed.New(api, heed.WithGate(gate), pol)          // fresh: learns aaaa from the fleet
		api.got = nil
		err := do(t3, "DELETE", "/channels/1/messages/5")
		assert.True(t, errors.As(err, &de) && de.Attempts == 0, "t3 held at the gate: %v", err)
		err = do(t2, "DELETE", "/channels/1/messages/4")
		assert.True(t, errors.As(err, &de) && de.Attempts == 0, "t2 held at the gate: %v", err)
		assert.Empty(t, api.got, "sent into bucket bbbb's hold")
	})
}

// countingGate is heed's gate, counting Pace calls on the fleet's names.
type countingGate struct {
	heed.QuotaGate
	mu    sync.Mutex
	names int
}

func (g *countingGate) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	if scope == "\x1fnames" {
		g.mu.Lock()
		g.names++
		g.mu.Unlock()
	}
	return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, update)
}

// TestFleetNamesOfAnUnnamedRoute: Discord answers some routes with no
// bucket ("not every endpoint has an endpoint-specific rate limit"). In a
// scope that names its limits such a shape is never seen answered with a
// name, and its sends merge with the fleet's names once a second at most,
// not each time.
func TestFleetNamesOfAnUnnamedRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &discordish{answer: func(r *http.Request) (int, http.Header) {
			if strings.HasSuffix(r.URL.Path, "/messages") {
				return 200, discord("abcd", 4, 5*time.Second, false)(time.Now())
			}
			return 200, http.Header{} // no bucket
		}}
		gate := &countingGate{QuotaGate: heed.NewGate().(heed.QuotaGate)}
		tr := heed.New(api, heed.WithGate(gate))
		do := func(method, path string) {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), method, "https://discord.com/api/v10"+path, nil))
			require.NoError(t, err)
			readBody(t, resp)
		}
		do("POST", "/channels/1/messages")
		gate.mu.Lock()
		before := gate.names
		gate.mu.Unlock()
		for range 20 {
			do("GET", "/users/@me")
		}
		gate.mu.Lock()
		defer gate.mu.Unlock()
		assert.LessOrEqual(t, gate.names-before, 1, "merges for 20 sends within the same instant")
	})
}

// orderGate is heed's gate, logging Pace and Hold calls in order.
type orderGate struct {
	heed.QuotaGate
	mu  sync.Mutex
	log []string
}

func (g *orderGate) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	g.mu.Lock()
	g.log = append(g.log, "pace "+strings.TrimPrefix(scope, "\x1f"))
	g.mu.Unlock()
	return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, update)
}

func (g *orderGate) Hold(ctx context.Context, scope string, until time.Time) error {
	g.mu.Lock()
	g.log = append(g.log, "hold "+strings.ReplaceAll(scope, "\x1f", "|"))
	g.mu.Unlock()
	return g.QuotaGate.Hold(ctx, scope, until)
}

// TestFleetHoldsBeforeItMergesNames: a shared gate hears of a hold before
// the names the answer taught are merged, a round trip sooner for the
// fleet's other sends (transport.go).
func TestFleetHoldsBeforeItMergesNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &githubish{}
		gate := &orderGate{QuotaGate: heed.NewGate().(heed.QuotaGate)}
		logged := fixtureRT(func(r *http.Request) (*http.Response, error) {
			resp, err := api.RoundTrip(r)
			gate.mu.Lock()
			gate.log = append(gate.log, "answer")
			gate.mu.Unlock()
			return resp, err
		})
		tr := heed.New(logged, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		require.NoError(t, ghDo(t, tr, "/user"))
		time.Sleep(2 * time.Second)
		gate.mu.Lock()
		gate.log = nil
		gate.mu.Unlock()
		_ = ghDo(t, tr, "/search/issues")
		gate.mu.Lock()
		defer gate.mu.Unlock()
		answered := slices.Index(gate.log, "answer")
		require.GreaterOrEqual(t, answered, 0, "%q", gate.log)
		after := gate.log[answered+1:]
		require.NotEmpty(t, after, "%q", gate.log)
		assert.Equal(t, "hold api.github.com|resource search", after[0], "the hold first: %q", gate.log)
		assert.Contains(t, after, "pace names", "the news merged: %q", gate.log)
	})
}

// TestFleetNamesAfterASlotWait: a call that waited for a slot
// (Limit.InFlight) after the gate merges with the fleet's names again
// before it is sent: a name the fleet learned during that wait, and the
// hold on it, hold the call.
func TestFleetNamesAfterASlotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &githubish{}
		gate := heed.NewGate()
		t1 := heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		require.NoError(t, ghDo(t, t1, "/repos/o/r"))
		require.NoError(t, ghDo(t, t1, "/user")) // core is the default
		t2 := heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxWait: time.Second, Limit: heed.Limit{InFlight: 1}}))
		resp, err := t2.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.github.com/repos/o/r", nil))
		require.NoError(t, err) // its body open: the one slot is taken
		done := make(chan error, 1)
		go func() { done <- ghDo(t, t2, "/search/code") }() // merged at the gate (unseen), waits for the slot
		synctest.Wait()
		var de *heed.DeferredError
		require.ErrorAs(t, ghDo(t, t1, "/search/code"), &de) // the fleet learns search, spent for a minute
		time.Sleep(10 * time.Millisecond)
		readBody(t, resp) // the slot frees
		err = <-done
		assert.True(t, errors.As(err, &de) && de.Attempts == 0, "held before it is sent: %v", err)
		assert.Equal(t, 1, api.searches, "a search reached the spent limit")
	})
}
