package heed_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
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
// name; once it was served so, its sends merge with the fleet's names once
// a second at most, not each time: 20 sends in one instant, or at a
// Limit's rate of 20 a second, each send having waited for it. The first
// send merges before it is sent, and, at a rate, once more after its wait
// for the rate, as a shape not seen answered does.
func TestFleetNamesOfAnUnnamedRoute(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit heed.Limit
	}{
		{"in one instant", heed.Limit{}},
		{"at a rate", heed.Limit{Rate: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &discordish{answer: func(r *http.Request) (int, http.Header) {
					if strings.HasSuffix(r.URL.Path, "/messages") {
						return 200, discord("abcd", 4, 5*time.Second, false)(time.Now())
					}
					return 200, http.Header{} // no bucket
				}}
				gate := &countingGate{QuotaGate: heed.NewGate().(heed.QuotaGate)}
				tr := heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{Limit: tc.limit}))
				require.NoError(t, dcDo(t, tr, "POST", "/channels/1/messages"))
				gate.mu.Lock()
				before := gate.names
				gate.mu.Unlock()
				start := time.Now()
				for range 20 {
					require.NoError(t, dcDo(t, tr, "GET", "/users/@me"))
				}
				took := time.Since(start)
				gate.mu.Lock()
				defer gate.mu.Unlock()
				most := 1 + int(took/time.Second)
				if tc.limit.Rate > 0 {
					most++
				}
				assert.LessOrEqual(t, gate.names-before, most, "merges for 20 sends in %v", took)
			})
		})
	}
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

// answering is an in-memory server answering each request with the status
// and header f gives.
func answering(f func(r *http.Request) (int, http.Header)) http.RoundTripper {
	return fixtureRT(func(r *http.Request) (*http.Response, error) {
		s, h := f(r)
		return &http.Response{StatusCode: s, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
	})
}

// dcDo sends method path to Discord's API through tr, and reads the body
// of its answer.
func dcDo(t *testing.T, tr http.RoundTripper, method, path string) error {
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), method, "https://discord.com/api/v10"+path, nil))
	if err == nil {
		readBody(t, resp)
	}
	return err
}

// heldAtGate reports whether err defers a call at the gate, unsent.
func heldAtGate(err error) bool {
	var de *heed.DeferredError
	return errors.As(err, &de) && de.Attempts == 0
}

// D1: a retry after a sub-second backoff neither merges (its shape's miss
// is within the second) nor counts as having waited.
// TestFleetNamesAfterABackoff: a retry waited out its backoff, so it merges
// with the fleet's names for its shape, not seen answered with a name, even
// within the second of its first attempt's merge: search, spent meanwhile
// through another Transport, holds it.
func TestFleetNamesAfterABackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var searches atomic.Int64
		api := answering(func(r *http.Request) (int, http.Header) {
			if !strings.HasPrefix(r.URL.Path, "/search/") {
				return 200, github("core", 4000, time.Hour)(time.Now())
			}
			if searches.Add(1) == 1 {
				return 502, http.Header{} // names nothing: the shape stays unseen
			}
			return 403, github("search", 0, time.Minute)(time.Now())
		})
		gate := heed.NewGate()
		pol := heed.WithPolicy(heed.Policy{MaxWait: 5 * time.Second, Backoff: heed.Constant(500 * time.Millisecond)})
		t1, t2 := heed.New(api, heed.WithGate(gate), pol), heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, ghDo(t, t1, "/repos/o/r"))
		require.NoError(t, ghDo(t, t1, "/user")) // core is the default
		require.NoError(t, ghDo(t, t2, "/user"))
		time.Sleep(2 * time.Second)
		require.NoError(t, ghDo(t, t2, "/user")) // t2 merges by the second
		done := make(chan error, 1)
		go func() { done <- ghDo(t, t2, "/search/code") }() // merges (unseen), 502, backs off
		synctest.Wait()
		require.Error(t, ghDo(t, t1, "/search/code")) // the fleet learns search, spent
		<-done
		assert.EqualValues(t, 2, searches.Load(), "t2's retry went into search's hold")
	})
}

// D2: awaitHold looks the name up once, before its loop; after waiting
// out the request scope's hold it sends in the limit it looked up before.
// TestFleetNamesAfterAHoldAtTheSlot: a call that waited for a slot, and
// then for its request scope's hold, merges with the fleet's names after
// that wait too: search, spent meanwhile through another Transport, holds
// it.
func TestFleetNamesAfterAHoldAtTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var searches atomic.Int64
		release := make(chan struct{})
		api := answering(func(r *http.Request) (int, http.Header) {
			switch {
			case strings.HasPrefix(r.URL.Path, "/search/"):
				if searches.Add(1) == 1 {
					<-release // t1's, in flight across the hold
				}
				return 403, github("search", 0, time.Minute)(time.Now())
			case r.URL.Path == "/throttle":
				return 429, http.Header{"Retry-After": {"5"}} // holds the request scope
			}
			return 200, github("core", 4000, time.Hour)(time.Now())
		})
		gate := heed.NewGate()
		t1 := heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		t2 := heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxWait: 10 * time.Second, Limit: heed.Limit{InFlight: 1}}))
		require.NoError(t, ghDo(t, t1, "/repos/o/r"))
		require.NoError(t, ghDo(t, t1, "/user"))
		resp, err := t2.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.github.com/repos/o/r", nil))
		require.NoError(t, err) // t2's one slot taken
		done, t1s := make(chan error, 1), make(chan error, 1)
		go func() { done <- ghDo(t, t2, "/search/code") }() // waits for the slot
		go func() { t1s <- ghDo(t, t1, "/search/code") }()  // in flight
		synctest.Wait()
		_ = ghDo(t, t1, "/throttle")
		time.Sleep(10 * time.Millisecond)
		readBody(t, resp) // t2's call merges, finds the 5 s hold, waits
		synctest.Wait()
		time.Sleep(time.Second)
		close(release) // the fleet learns search, spent
		<-t1s
		<-done
		assert.EqualValues(t, 1, searches.Load(), "t2 sent into search's hold after its wait")
	})
}

// D3: a name the Transport already knows, answered again, keeps its old
// learned-at: the merge its hold triggers takes another's earlier name.
// TestFleetNamesDateAConfirmedName: an answer that gives a shape the name
// it has dates it anew (Discord counts deletes in two buckets by the
// message's age): a name another Transport learned between the two
// answers does not take its place, and the Transport is held by the
// bucket it spent.
func TestFleetNamesDateAConfirmedName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var spent atomic.Bool
		var sent atomic.Int64
		api := answering(func(r *http.Request) (int, http.Header) {
			sent.Add(1)
			if r.Method == "GET" {
				return 200, discord("efgh", 9, 10*time.Second, false)(time.Now())
			}
			id, _ := strconv.Atoi(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
			switch {
			case id < 100: // an old message: a bucket of its own
				return 200, discord("bbbb", 4, 5*time.Second, false)(time.Now())
			case spent.Load():
				return 429, discord("aaaa", 0, 30*time.Second, false)(time.Now())
			}
			return 200, discord("aaaa", 4, 5*time.Second, false)(time.Now())
		})
		gate := heed.NewGate()
		pol := heed.WithPolicy(heed.Policy{MaxWait: time.Second})
		t1, t2 := heed.New(api, heed.WithGate(gate), pol), heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, dcDo(t, t1, "DELETE", "/channels/1/messages/500")) // aaaa @0
		time.Sleep(1900 * time.Millisecond)
		require.NoError(t, dcDo(t, t1, "GET", "/guilds/9/members")) // t1 merges
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, dcDo(t, t2, "DELETE", "/channels/1/messages/5")) // bbbb @2.0
		time.Sleep(100 * time.Millisecond)
		spent.Store(true)
		require.Error(t, dcDo(t, t1, "DELETE", "/channels/1/messages/501")) // aaaa @2.1, held 30 s
		before := sent.Load()
		assert.True(t, heldAtGate(dcDo(t, t1, "DELETE", "/channels/1/messages/502")))
		assert.Equal(t, before, sent.Load(), "sent into aaaa's hold")
	})
}

// slowNames: heed's gate, whose Pace on the names takes a round trip.
// slowNames is heed's gate, whose Pace on the fleet's names takes 5 ms,
// as a round trip to Redis may.
type slowNames struct{ heed.QuotaGate }

func (g slowNames) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	if scope == "\x1fnames" {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, update)
}

// D4: with news in every answer (deletes of messages of both ages), the
// call that runs a merge keeps merging for the others' news until
// paceTimeout (1 s), past its own 100 ms deadline.
// TestFleetNewsDoesNotHoldACall: when every answer is news (names that
// change with each message), a call merges at most once more for the news
// that came during its merge, and leaves the rest to the next send's: no
// call is held long past its deadline.
func TestFleetNewsDoesNotHoldACall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		api := answering(func(r *http.Request) (int, http.Header) {
			time.Sleep(3 * time.Millisecond)
			b := map[bool]string{true: "aaaa", false: "bbbb"}[n.Add(1)%2 == 0]
			return 200, discord(b, 4, 5*time.Second, false)(time.Now())
		})
		tr := heed.New(api, heed.WithGate(slowNames{heed.NewGate().(heed.QuotaGate)}))
		var mu sync.Mutex
		var worst time.Duration
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 1500 {
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					start := time.Now()
					resp, err := tr.RoundTrip(newRequest(t, ctx, "DELETE", "https://discord.com/api/v10/channels/"+strconv.Itoa(w+1)+"/messages/"+strconv.Itoa(i+1), nil))
					if err == nil {
						readBody(t, resp)
					}
					cancel()
					mu.Lock()
					worst = max(worst, time.Since(start))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Less(t, worst, 200*time.Millisecond, "a call held by the others' news")
	})
}

// D5: a request scope that is not UTF-8 is written under another key:
// never shared, and every merge writes.
// TestFleetNamesOfAScopeNotUTF8: a request scope that is not valid UTF-8
// (a ScopeFor taking a header's bytes) cannot be kept in the fleet's
// names, whose JSON would change it. It is left to each Transport.
func TestFleetNamesOfAScopeNotUTF8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &githubish{}
		gate := heed.NewGate()
		pol := heed.WithPolicy(heed.Policy{MaxWait: time.Second, ScopeFor: func(*http.Request) string { return "tenant-\xff" }})
		t1 := heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, ghDo(t, t1, "/repos/o/r"))
		require.NoError(t, ghDo(t, t1, "/user"))
		require.Error(t, ghDo(t, t1, "/search/issues"))
		t3 := heed.New(api, heed.WithGate(gate), pol)
		assert.True(t, heldAtGate(ghDo(t, t3, "/search/issues")))
		assert.Equal(t, 1, api.searches, "a search reached the spent limit")
	})
}

// D6: a learned-at at MaxInt64 (any writer of the state) wins for good:
// learn's previous+1 wraps. One an hour ahead wins a race the same way.
// TestFleetNamesFromTheFuture: a name dated far ahead in the fleet's names
// (a garbled state, or a clock far ahead) is read as dated a minute ahead at
// most, so a name learned later still takes its place.
func TestFleetNamesFromTheFuture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Int64
		api := answering(func(r *http.Request) (int, http.Header) {
			sent.Add(1)
			return 429, discord("bbbb", 0, 30*time.Second, false)(time.Now())
		})
		gate := heed.NewGate()
		t1 := heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
		require.NoError(t, gate.(heed.PaceGate).Pace(context.Background(), "\x1fnames", func([]byte) []byte {
			return []byte(`{"s":{"discord.com":{"t":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `,"n":{"DELETE /api/{}/channels/{}/messages/{}":{"n":"bucket aaaa","t":9223372036854775807}}}}}`)
		}))
		for i := range 3 {
			before := sent.Load()
			err := dcDo(t, t1, "DELETE", "/channels/1/messages/"+strconv.Itoa(i+2))
			if i > 0 {
				assert.Equal(t, before, sent.Load(), "try %d sent into bbbb's hold: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// writesGate is heed's gate, counting Pace calls on the fleet's names
// that change the state, and its size.
type writesGate struct {
	heed.QuotaGate
	mu     sync.Mutex
	reads  int
	writes int
	size   int
}

func (g *writesGate) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	if scope != "\x1fnames" {
		return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, update)
	}
	return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, func(b []byte) []byte {
		next := update(b)
		g.mu.Lock()
		g.reads++
		if !bytes.Equal(b, next) {
			g.writes++
			g.size = len(next)
		}
		g.mu.Unlock()
		return next
	})
}

// letters is a repository name with no digit, distinct for each i.
func letters(i int) string {
	s := ""
	for {
		s += string(rune('a' + i%26))
		i /= 26
		if i == 0 {
			return s
		}
	}
}

// blockingNames is heed's gate, whose Pace on the fleet's names, while
// block is set, signals entered and waits for release.
type blockingNames struct {
	heed.QuotaGate
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *blockingNames) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	if scope == "\x1fnames" && g.block.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, update)
}

// TestFleetNewsOfAnIdleTransport: a Transport that learns names and spent
// limits while merges are under way, then sends nothing more, has them
// merged all the same: ten seconds later another Transport is held by
// them.
func TestFleetNewsOfAnIdleTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Int64
		hold := map[string]chan struct{}{"/b": make(chan struct{}), "/c": make(chan struct{})}
		api := answering(func(r *http.Request) (int, http.Header) {
			sent.Add(1)
			res := strings.TrimPrefix(r.URL.Path, "/")
			if ch, ok := hold[r.URL.Path]; ok && r.Header.Get("X-Pre") == "" {
				<-ch
				return 403, github("r"+res, 0, time.Minute)(time.Now())
			}
			if r.URL.Path == "/a" && r.Header.Get("X-Pre") == "" {
				return 403, github("r"+res, 0, time.Minute)(time.Now())
			}
			return 200, github("r"+res, 5, time.Minute)(time.Now())
		})
		gate := &blockingNames{QuotaGate: heed.NewGate().(heed.QuotaGate), entered: make(chan struct{}), release: make(chan struct{})}
		pol := heed.WithPolicy(heed.Policy{MaxWait: time.Second, MaxAttempts: 1})
		t1 := heed.New(api, heed.WithGate(gate), pol)
		do := func(tr http.RoundTripper, path string, pre bool) error { return ghPre(t, tr, path, pre) }
		require.NoError(t, do(t1, "/a", true)) // ra, rb: one vote each, no default
		require.NoError(t, do(t1, "/b", true))
		time.Sleep(2 * time.Second)
		go do(t1, "/b", false) // in flight
		go do(t1, "/c", false) // unseen: merged, then in flight
		synctest.Wait()
		gate.block.Store(true)
		go do(t1, "/a", false) // ra spent: news, a merge under way
		<-gate.entered
		close(hold["/b"]) // rb spent: news during turn 0
		synctest.Wait()
		gate.release <- struct{}{}
		<-gate.entered    // the next merge, for /b's news
		close(hold["/c"]) // /c learned, rc spent: news during it
		synctest.Wait()
		gate.release <- struct{}{}
		synctest.Wait()
		gate.block.Store(false)
		for merging := true; merging; { // the merges the news still waits for
			select {
			case <-gate.entered:
				gate.release <- struct{}{}
				synctest.Wait()
			default:
				merging = false
			}
		}
		time.Sleep(10 * time.Second) // t1 sends nothing more
		freshIsHeld(t, heed.New(api, heed.WithGate(gate), pol), &sent, "/c")
	})
}

// TestFleetNamesOfARouteNamedLater: a shape served once with no name (a
// proxy, or a server that names only some answers) still merges for once
// a second: when another Transport later learns its name and spends that
// limit, the Transport that saw it unnamed is held by it.
func TestFleetNamesOfARouteNamedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var named atomic.Bool
		var me atomic.Int64
		api := answering(func(r *http.Request) (int, http.Header) {
			if strings.HasSuffix(r.URL.Path, "/users/@me") {
				me.Add(1)
				if named.Load() {
					return 429, discord("uuuu", 0, 30*time.Second, false)(time.Now())
				}
				return 200, http.Header{} // served with no name, once
			}
			return 200, discord("abcd", 4, 5*time.Second, false)(time.Now())
		})
		gate := heed.NewGate()
		pol := heed.WithPolicy(heed.Policy{MaxWait: time.Second})
		a, b := heed.New(api, heed.WithGate(gate), pol), heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, dcDo(t, a, "POST", "/channels/1/messages")) // the scope names its limits
		require.NoError(t, dcDo(t, a, "GET", "/users/@me"))            // marked unnamed
		time.Sleep(2 * time.Second)
		require.NoError(t, dcDo(t, a, "POST", "/channels/1/messages")) // a merges by the second
		named.Store(true)
		require.Error(t, dcDo(t, b, "GET", "/users/@me")) // b learns uuuu, spent 30 s; merged as news
		before := me.Load()
		err := dcDo(t, a, "GET", "/users/@me")
		assert.True(t, heldAtGate(err), "a: %v", err)
		assert.Equal(t, before, me.Load(), "a sent into uuuu's hold the fleet knew")
	})
}

// panicNames is heed's gate whose Pace on the fleet's names panics once.
type panicNames struct {
	heed.QuotaGate
	armed atomic.Bool
}

func (g *panicNames) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	if scope == "\x1fnames" && g.armed.CompareAndSwap(true, false) {
		panic("gate bug")
	}
	return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, update)
}

// TestFleetNamesAfterAMergePanicked: a merge whose gate panics (recovered
// by the caller, as net/http's server does for a handler) ends all the
// same: later sends, of a shape not seen among them, do not wait on it.
func TestFleetNamesAfterAMergePanicked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := answering(func(r *http.Request) (int, http.Header) {
			return 200, discord("b"+r.URL.Path[len(r.URL.Path)-1:], 4, 5*time.Second, false)(time.Now())
		})
		gate := &panicNames{QuotaGate: heed.NewGate().(heed.QuotaGate)}
		tr := heed.New(api, heed.WithGate(gate))
		do := func(path string) (took time.Duration, panicked bool) {
			defer func() { panicked = recover() != nil }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			if resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "https://discord.com/api/v10"+path, nil)); err == nil {
				readBody(t, resp)
			}
			return time.Since(start), false
		}
		do("/channels/1/a")
		gate.armed.Store(true)
		time.Sleep(2 * time.Second)
		_, p := do("/channels/1/a") // due: the merge panics
		assert.True(t, p)
		took, _ := do("/channels/1/b") // unseen shape in a named scope
		assert.Less(t, took, 2*time.Second, "an unseen send waited on a merge that never ends")
	})
}

// stuckNames is heed's gate whose Pace on the names, while slow is set,
// takes 3 s and does not heed its context (a client with its own timeout).
type stuckNames struct {
	heed.QuotaGate
	slow atomic.Bool
}

func (g *stuckNames) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	if scope == "\x1fnames" && g.slow.Load() {
		time.Sleep(3 * time.Second)
	}
	return g.QuotaGate.(heed.PaceGate).Pace(ctx, scope, update)
}

// TestFleetNewsOwedToALaterMerge: news that times out waiting for a merge
// (a gate that takes 3 s and ignores its context) is owed to a merge
// begun after it, not cleared by the older merge it waited for: the next
// send merges it, and another Transport is held by it.
func TestFleetNewsOwedToALaterMerge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Int64
		release := make(chan struct{})
		api := answering(func(r *http.Request) (int, http.Header) {
			sent.Add(1)
			res := "r" + strings.TrimPrefix(r.URL.Path, "/")
			if r.URL.Path == "/c" && r.Header.Get("X-Pre") == "" {
				<-release
				return 403, github(res, 0, time.Minute)(time.Now())
			}
			return 200, github(res, 5, time.Minute)(time.Now())
		})
		gate := &stuckNames{QuotaGate: heed.NewGate().(heed.QuotaGate)}
		pol := heed.WithPolicy(heed.Policy{MaxWait: time.Second, MaxAttempts: 1})
		do := func(tr http.RoundTripper, path string, pre bool) error { return ghPre(t, tr, path, pre) }
		t1 := heed.New(api, heed.WithGate(gate), pol)
		require.NoError(t, do(t1, "/a", true))
		time.Sleep(2 * time.Second)
		go do(t1, "/c", false) // merges, then in flight
		synctest.Wait()
		time.Sleep(1100 * time.Millisecond)
		gate.slow.Store(true)
		go do(t1, "/a", true) // due: merge k, 3 s
		synctest.Wait()
		gate.slow.Store(false)
		close(release) // /c learned, rc spent: the news waits for k, then merges itself
		time.Sleep(15 * time.Second)
		freshIsHeld(t, heed.New(api, heed.WithGate(gate), pol), &sent, "/c")
	})
}

// ghPre sends a GET of path to api.github.com through tr, marked X-Pre when
// pre is set (the server then serves it, whatever its limit), and reads
// the body of its answer.
func ghPre(t *testing.T, tr http.RoundTripper, path string, pre bool) error {
	req := newRequest(t, t.Context(), "GET", "https://api.github.com"+path, nil)
	if pre {
		req.Header.Set("X-Pre", "1")
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		readBody(t, resp)
	}
	return err
}

// freshIsHeld checks that a Transport that has sent nothing, through which
// path goes, marked X-Pre, is held at the gate by what the fleet learned,
// and sends nothing.
func freshIsHeld(t *testing.T, tr http.RoundTripper, sent *atomic.Int64, path string) {
	t.Helper()
	before := sent.Load()
	err := ghPre(t, tr, path, true)
	assert.True(t, heldAtGate(err), "a new Transport: %v", err)
	assert.Equal(t, before, sent.Load(), "sent into the hold the fleet learned")
}

// TestFleetNamesOfMoreShapesThanTheyKeep: a Transport that knows more
// shapes of a scope than the fleet's names keep (a crawl of 400
// repositories; the names keep 256) gives them the same ones at each
// merge, those it came to know latest, however often its answers date the
// names, so that 30 merges with nothing new write nothing: while it sends
// a known shape once a second, or the same 400 again and again; and each
// shape voted once.
func TestFleetNamesOfMoreShapesThanTheyKeep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		round  func(t *testing.T, tr http.RoundTripper, round int)
		shapes int // sent in all
	}{
		{"a known shape once a second", func(t *testing.T, tr http.RoundTripper, _ int) {
			require.NoError(t, ghDo(t, tr, "/user"))
		}, 401},
		{"the same 400 again", func(t *testing.T, tr http.RoundTripper, round int) {
			for i := range 40 {
				require.NoError(t, ghDo(t, tr, "/repos/o/"+letters(round%10*40+i)))
			}
		}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &githubish{}
				gate := &writesGate{QuotaGate: heed.NewGate().(heed.QuotaGate)}
				tr := heed.New(api, heed.WithGate(gate))
				for i := range 400 {
					require.NoError(t, ghDo(t, tr, "/repos/o/"+letters(i)))
					time.Sleep(time.Millisecond) // a crawl's answers come a moment apart
				}
				time.Sleep(2 * time.Second)
				gate.mu.Lock()
				before := gate.writes
				gate.mu.Unlock()
				for round := range 30 {
					tc.round(t, tr, round)
					time.Sleep(1100 * time.Millisecond)
				}
				var votes []byte
				_ = gate.QuotaGate.(heed.PaceGate).Pace(context.Background(), "\x1fnames", func(b []byte) []byte {
					if i := bytes.Index(b, []byte(`"v":`)); i >= 0 {
						votes = b[i:min(len(b), i+40)]
					}
					return b
				})
				t.Logf("votes %s", votes)
				gate.mu.Lock()
				defer gate.mu.Unlock()
				assert.LessOrEqual(t, gate.writes-before, 1, "writes with nothing new in 30 merges")
				assert.Contains(t, string(votes), `"resource core":`+strconv.Itoa(tc.shapes)+`}`, "a vote for each shape")
			})
		})
	}
}

// TestFleetNamesOfTwoCrawlers: two Transports that crawl the same 400
// shapes in opposite orders, then send them again and again, learn nothing
// new: they rank the shapes alike, by when the fleet learned them, so
// their merges write next to nothing.
func TestFleetNamesOfTwoCrawlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &githubish{}
		gate := &writesGate{QuotaGate: heed.NewGate().(heed.QuotaGate)}
		a, b := heed.New(api, heed.WithGate(gate)), heed.New(api, heed.WithGate(gate))
		for i := range 400 {
			require.NoError(t, ghDo(t, a, "/repos/o/"+letters(i)))
			require.NoError(t, ghDo(t, b, "/repos/o/"+letters(399-i)))
			time.Sleep(time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		gate.mu.Lock()
		before := gate.writes
		gate.mu.Unlock()
		for round := range 30 {
			for i := range 40 {
				require.NoError(t, ghDo(t, a, "/repos/o/"+letters(round%10*40+i)))
				require.NoError(t, ghDo(t, b, "/repos/o/"+letters(round%10*40+i)))
			}
			time.Sleep(1100 * time.Millisecond)
		}
		gate.mu.Lock()
		defer gate.mu.Unlock()
		t.Logf("state %d bytes", gate.size)
		assert.LessOrEqual(t, gate.writes-before, 2, "writes with nothing new in 30 rounds of 2 Transports")
	})
}
