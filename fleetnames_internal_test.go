package heed

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed/internal/rules"
)

// sampleFleetNames is a fleet's names of two hosts: GitHub's, with core
// the default and search held, and Discord's buckets.
func sampleFleetNames() []byte {
	return []byte(`{"s":{"api.github.com":{"t":946684800000,"f":"resource core","v":{"resource core":2,"resource search":1},` +
		`"n":{"GET /repos/o/r":{"n":"resource core","t":946684790000},"GET /user":{"n":"resource core","t":946684790000},` +
		`"GET /search/issues":{"n":"resource search","t":946684795000}},` +
		`"l":{"resource search":946684860000}},` +
		`"discord.com":{"t":946684800000,"n":{"POST /api/v10/channels/{}/messages":{"n":"bucket abcd","t":946684790000}}}}}`)
}

// FuzzFleetNames: whatever state a gate holds, reading it as the fleet's
// names gives names within their bounds, or none; what is read encodes
// and reads again alike, and merges and is absorbed within the bounds.
func FuzzFleetNames(f *testing.F) {
	f.Add(sampleFleetNames())
	f.Add([]byte(`{"s":{}}`))
	f.Add([]byte(`{"s":{"h":{"t":1,"n":{"GET /x":{"n":"resource","t":1}}}}}`))
	f.Add([]byte(`{"s":{"h":null}}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		now := time.UnixMilli(946684830000)
		tab, _ := decodeFleetNames(b, now)
		require.NotNil(t, tab)
		again, err := json.Marshal(tab)
		require.NoError(t, err)
		back, clean := decodeFleetNames(again, now)
		require.True(t, clean || len(tab.Scopes) == 0 && len(again) == 0, "what was read does not read whole once written: %s", again)
		twice, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(again), string(twice), "encoding is not stable")
		var n names
		n.absorb(tab, now)
		assert.LessOrEqual(t, len(n.scopes), namedScopesKeep)
		tab.merge(n.export(now), now)
		assert.LessOrEqual(t, len(tab.Scopes), fleetScopesKeep)
		for _, s := range tab.Scopes {
			assert.LessOrEqual(t, len(s.Shapes), fleetShapesKeep)
			assert.LessOrEqual(t, len(s.Votes), namedVotesKeep)
			assert.LessOrEqual(t, len(s.Live), fleetLiveKeep)
		}
		merged, err := json.Marshal(tab)
		require.NoError(t, err)
		_, clean = decodeFleetNames(merged, now)
		assert.True(t, clean, "a merged state does not read whole: %s", merged)
	})
}

// TestDecodeFleetNames: a state heed did not write reads as no names; one
// with a scope, shape, name or count heed would not keep reads without
// it, not clean (the next merge writes what was read); the sample reads
// whole.
func TestDecodeFleetNames(t *testing.T) {
	many := func(n int, entry func(i int) string) string {
		s := ""
		for i := range n {
			if i > 0 {
				s += ","
			}
			s += entry(i)
		}
		return s
	}
	shapes := func(tab *fleetTable) int {
		n := 0
		for _, s := range tab.Scopes {
			n += len(s.Shapes)
		}
		return n
	}
	tests := []struct {
		name           string
		state          string
		clean          bool
		scopes, shapes int // what is read
	}{
		{"the sample", string(sampleFleetNames()), true, 2, 4},
		{"no scopes", `{"s":{}}`, true, 0, 0},
		{"empty", ``, false, 0, 0},
		{"not JSON", `{"s":`, false, 0, 0},
		{"no scope map", `{}`, false, 0, 0},
		{"a null scope", `{"s":{"h":null,"g":{"t":1}}}`, false, 1, 0},
		{"an empty scope name", `{"s":{"":{"t":1}}}`, false, 0, 0},
		{"a scope not UTF-8, as base64", `{"s":{"\u0000dGVuYW50Lf8":{"t":1}}}`, true, 1, 0},
		{"a mark, but not base64", `{"s":{"\u0000!!":{"t":1}}}`, false, 0, 0},
		{"a scope too long", `{"s":{"` + strings.Repeat("h", fleetScopeLen+1) + `":{"t":1}}}`, false, 0, 0},
		{"a name of no kind", `{"s":{"h":{"t":1,"n":{"GET /x":{"n":"core","t":1},"GET /y":{"n":"resource core","t":1}}}}}`, false, 1, 1},
		{"a name with a space", `{"s":{"h":{"t":1,"n":{"GET /x":{"n":"resource a b","t":1}}}}}`, false, 1, 0},
		{"a bucket default", `{"s":{"h":{"t":1,"f":"bucket abcd"}}}`, false, 1, 0},
		{"a bucket vote", `{"s":{"h":{"t":1,"v":{"bucket abcd":1}}}}`, false, 1, 0},
		{"a vote of 0", `{"s":{"h":{"t":1,"v":{"resource core":0}}}}`, false, 1, 0},
		{"a shape with no path", `{"s":{"h":{"t":1,"n":{"GET":{"n":"resource core","t":1}}}}}`, false, 1, 0},
		{"a shape with a control byte", `{"s":{"h":{"t":1,"n":{"GET /a\u0001":{"n":"resource core","t":1}}}}}`, false, 1, 0},
		{"a shape too long", `{"s":{"h":{"t":1,"n":{"GET /` + strings.Repeat("a", fleetShapeLen) + `":{"n":"resource core","t":1}}}}}`, false, 1, 0},
		{"a live name of no kind", `{"s":{"h":{"t":1,"l":{"core":5}}}}`, false, 1, 0},
		{"too many scopes", `{"s":{` + many(fleetScopesKeep+1, func(i int) string { return `"h` + strconv.Itoa(i) + `":{"t":1}` }) + `}}`, false, fleetScopesKeep, 0},
		{"scopes at the bound", `{"s":{` + many(fleetScopesKeep, func(i int) string { return `"h` + strconv.Itoa(i) + `":{"t":1}` }) + `}}`, true, fleetScopesKeep, 0},
		{"too many shapes", `{"s":{"h":{"t":1,"n":{` + many(fleetShapesKeep+1, func(i int) string { return `"GET /` + strconv.Itoa(i) + `":{"n":"resource core","t":1}` }) + `}}}}`, false, 1, fleetShapesKeep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, clean := decodeFleetNames([]byte(tc.state), time.UnixMilli(946684800000))
			require.NotNil(t, tab)
			assert.Equal(t, tc.clean, clean)
			assert.Len(t, tab.Scopes, tc.scopes)
			assert.Equal(t, tc.shapes, shapes(tab))
		})
	}
}

// TestFleetScopeBounds: past its bound of shapes, the fleet's names of a
// scope forget, for a shape learned later, the one learned longest ago, of
// the default first, never one whose limit holds; they learn no new shape
// when every one holds, nor one learned before all they keep. Past their
// bound of scopes, they forget the scope changed longest ago of those with
// nothing held.
func TestFleetScopeBounds(t *testing.T) {
	const ms = int64(1_000_000)
	full := func(name func(i int) string, live map[string]int64) *fleetScope {
		s := &fleetScope{At: ms, Shapes: map[string]fleetShape{}, Live: live}
		for i := range fleetShapesKeep {
			s.Shapes["GET /"+strconv.Itoa(i)] = fleetShape{name(i), ms - 1000 + int64(i)}
		}
		return s
	}
	tests := []struct {
		name     string
		scope    *fleetScope
		fallback string
		at       int64  // when the new shape was learned
		learned  bool   // the new shape is learned
		forgot   string // the shape forgotten for it; "" none
	}{
		{"the default's shape goes first", full(func(i int) string {
			if i == 7 {
				return "resource core"
			}
			return "resource other"
		}, nil), "resource core", ms, true, "GET /7"},
		{"else the one learned longest ago", full(func(int) string { return "resource search" }, nil), "", ms, true, "GET /0"},
		{"none learned before it", full(func(int) string { return "resource search" }, nil), "", ms - 2000, false, ""},
		{"never one whose limit holds", full(func(i int) string {
			if i == 9 {
				return "resource free"
			}
			return "resource search"
		}, map[string]int64{"resource search": ms + 60_000}), "", ms, true, "GET /9"},
		{"every limit holds: nothing learned", full(func(int) string { return "resource search" }, map[string]int64{"resource search": ms + 60_000}), "", ms, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.scope.Fallback = tc.fallback
			before := map[string]string{}
			for k, v := range tc.scope.Shapes {
				before[k] = v.Name
			}
			changed := tc.scope.merge(&fleetScope{Shapes: map[string]fleetShape{"GET /new": {"resource graphql", tc.at}}}, ms)
			assert.Equal(t, tc.learned, changed)
			assert.LessOrEqual(t, len(tc.scope.Shapes), fleetShapesKeep)
			_, learned := tc.scope.Shapes["GET /new"]
			assert.Equal(t, tc.learned, learned)
			gone := ""
			for k := range before {
				if _, ok := tc.scope.Shapes[k]; !ok {
					gone = k
				}
			}
			assert.Equal(t, tc.forgot, gone)
		})
	}

	t.Run("scopes", func(t *testing.T) {
		tab := &fleetTable{Scopes: map[string]*fleetScope{}}
		for i := range fleetScopesKeep {
			s := &fleetScope{At: ms - int64(i)}
			if i == fleetScopesKeep-1 {
				s.Live = map[string]int64{"resource search": ms + 60_000} // the oldest, but held
			}
			tab.Scopes["h"+strconv.Itoa(i)] = s
		}
		now := time.UnixMilli(ms)
		require.True(t, tab.merge(map[string]*fleetScope{"new": {Shapes: map[string]fleetShape{"GET /x": {"resource core", ms}}}}, now))
		assert.Len(t, tab.Scopes, fleetScopesKeep)
		assert.Contains(t, tab.Scopes, "new")
		assert.Contains(t, tab.Scopes, "h"+strconv.Itoa(fleetScopesKeep-1), "a scope that holds is kept")
		assert.NotContains(t, tab.Scopes, "h"+strconv.Itoa(fleetScopesKeep-2), "the oldest with nothing held goes")
	})
}

// TestFleetDefaultKeptWhileItHolds: the fleet's default resource is
// elected from the shapes it first learned with each resource, and is not
// elected anew while it holds: the shapes never seen that it holds would
// go unheld.
func TestFleetDefaultKeptWhileItHolds(t *testing.T) {
	const ms = int64(1_000_000)
	s := &fleetScope{}
	s.merge(&fleetScope{Shapes: map[string]fleetShape{"GET /a": {"resource core", ms}, "GET /b": {"resource core", ms}, "GET /s": {"resource search", ms}}}, ms)
	require.Equal(t, "resource core", s.Fallback)
	s.merge(&fleetScope{Live: map[string]int64{"resource core": ms + 60_000}, Shapes: map[string]fleetShape{
		"GET /s1": {"resource search", ms}, "GET /s2": {"resource search", ms}, "GET /s3": {"resource search", ms},
	}}, ms)
	assert.Equal(t, "resource core", s.Fallback, "kept while core holds")
	s.merge(&fleetScope{}, ms+60_001)
	assert.Equal(t, "resource search", s.Fallback, "elected once core no longer holds")
	assert.Equal(t, map[string]int{"resource core": 2, "resource search": 4}, s.Votes)
}

// TestFleetNamesKeptWhileHeld: a sync that finds a named limit holding
// renews the state's change time every rules.PaceKeep/2, so that a gate,
// which may forget a state unchanged for rules.PaceKeep, keeps it while
// the fleet sends; once nothing holds and nothing changed for
// rules.PaceKeep, the scope is forgotten. A state heed did not write is
// replaced.
func TestFleetNamesKeptWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := NewGate().(*memGate)
		require.NoError(t, gate.Pace(t.Context(), fleetNamesScope, func([]byte) []byte { return []byte("not the fleet's names") }))
		f := &fleetNames{gate: gate}
		var n names
		req, err := http.NewRequest("GET", "https://api.github.com/search/issues", nil)
		require.NoError(t, err)
		n.learn("api.github.com", &lazyShape{req: req}, "resource search")
		n.held("api.github.com", "resource search", time.Now().Add(time.Hour))
		read := func() *fleetTable {
			var tab *fleetTable
			require.NoError(t, gate.Pace(context.Background(), fleetNamesScope, func(b []byte) []byte {
				tab, _ = decodeFleetNames(b, time.Now())
				return b
			}))
			return tab
		}
		f.news(t.Context(), &n)
		tab := read()
		require.NotNil(t, tab, "the state heed did not write is replaced")
		first := tab.Scopes["api.github.com"].At
		for range 5 {
			time.Sleep(rules.PaceKeep/2 + time.Second)
			f.news(t.Context(), &n)
			tab = read()
			require.NotNil(t, tab, "kept while search holds")
			assert.Greater(t, tab.Scopes["api.github.com"].At, first)
		}
		time.Sleep(time.Hour)
		var fresh names // a process that knows nothing, with nothing held
		f2 := &fleetNames{gate: gate}
		f2.news(t.Context(), &fresh)
		time.Sleep(rules.PaceKeep)
		f2.news(t.Context(), &fresh)
		tab = read()
		if tab != nil {
			assert.NotContains(t, tab.Scopes, "api.github.com", "forgotten once nothing holds or changes")
		}
	})
}

// slowPace is a PaceGate whose Pace calls wait for release, once entered.
type slowPace struct {
	*memGate
	entered chan struct{}
	release chan struct{}
}

func (g slowPace) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	g.entered <- struct{}{}
	<-g.release
	return g.memGate.Pace(ctx, scope, update)
}

// TestFleetNewsDuringAMerge: news a Transport learns while a merge with
// the fleet's names is under way, which may have exported what it knew
// before, is merged by a merge begun after it, which the call with the
// news waits for and runs.
func TestFleetNewsDuringAMerge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := slowPace{NewGate().(*memGate), make(chan struct{}), make(chan struct{})}
		f := &fleetNames{gate: gate}
		var n names
		first := make(chan struct{})
		go func() {
			f.news(context.Background(), &n) // a merge under way
			close(first)
		}()
		<-gate.entered
		req, err := http.NewRequest("GET", "https://api.github.com/search/issues", nil)
		require.NoError(t, err)
		n.learn("api.github.com", &lazyShape{req: req}, "resource search")
		second := make(chan struct{})
		go func() {
			f.news(context.Background(), &n) // the news: waits for the merge under way
			close(second)
		}()
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("the news returned before a merge begun after it")
		default:
		}
		gate.release <- struct{}{}
		<-first
		<-gate.entered // the news' own merge
		gate.release <- struct{}{}
		<-second
		var tab *fleetTable
		require.NoError(t, gate.memGate.Pace(context.Background(), fleetNamesScope, func(b []byte) []byte {
			tab, _ = decodeFleetNames(b, time.Now())
			return b
		}))
		require.NotNil(t, tab)
		assert.Equal(t, "resource search", tab.Scopes["api.github.com"].Shapes["GET /search/issues"].Name)
	})
}

// TestFleetNamesDoNotFlap: two Transports that give a shape different
// names, merging in turn, leave the fleet's names with the one learned
// later, written once each, not at every merge.
func TestFleetNamesDoNotFlap(t *testing.T) {
	for _, first := range []bool{true, false} {
		t.Run("the later merged "+map[bool]string{true: "second", false: "first"}[first], func(t *testing.T) {
			now := time.UnixMilli(946684800000)
			tab := &fleetTable{Scopes: map[string]*fleetScope{}}
			older := map[string]*fleetScope{"h": {Shapes: map[string]fleetShape{"DELETE /c/{}": {"bucket aaaa", 946684700000}}}}
			later := map[string]*fleetScope{"h": {Shapes: map[string]fleetShape{"DELETE /c/{}": {"bucket bbbb", 946684750000}}}}
			writes := 0
			for i := range 10 {
				now = now.Add(time.Second)
				m := older
				if (i%2 == 1) == first {
					m = later
				}
				if tab.merge(m, now) {
					writes++
				}
			}
			assert.Equal(t, "bucket bbbb", tab.Scopes["h"].Shapes["DELETE /c/{}"].Name)
			assert.LessOrEqual(t, writes, 2)
		})
	}
}

// TestFleetMergeDueOnlyByTheSecond: sends that find a merge due only by
// its second under way go on at once, and have it merge no more: the
// call that began it ends after one merge.
func TestFleetMergeDueOnlyByTheSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := slowPace{NewGate().(*memGate), make(chan struct{}), make(chan struct{})}
		f := &fleetNames{gate: gate}
		var n names
		req, err := http.NewRequest("GET", "https://h/x", nil)
		require.NoError(t, err)
		f.synced.Store(mono(time.Now()) - int64(2*time.Second)) // due
		done := make(chan struct{})
		go func() {
			f.refresh(context.Background(), &n, "h", &lazyShape{req: req}, false)
			close(done)
		}()
		<-gate.entered
		for range 10 {
			time.Sleep(10 * time.Millisecond)
			f.refresh(context.Background(), &n, "h", &lazyShape{req: req}, false) // returns at once
		}
		gate.release <- struct{}{}
		<-done
		select {
		case <-gate.entered:
			t.Fatal("a second merge")
		default:
		}
	})
}

// FuzzFleetKey: every scope has a key in the fleet's names that JSON keeps
// as it is, and reads back as the scope; any key reads without a panic.
func FuzzFleetKey(f *testing.F) {
	for _, s := range []string{"api.github.com", "tenant-\xff", "\x00dGVuYW50Lf8", "", "ünïcode.example", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, scope string) {
		key := fleetKey(scope)
		require.True(t, utf8.ValidString(key))
		back, ok := scopeOfKey(key)
		require.True(t, ok)
		require.Equal(t, scope, back)
		b, err := json.Marshal(map[string]int{key: 1})
		require.NoError(t, err)
		var m map[string]int
		require.NoError(t, json.Unmarshal(b, &m))
		require.Contains(t, m, key)
		_, _ = scopeOfKey(scope)
	})
}

// stepPace is heed's gate whose Pace signals entered, then takes a
// verdict from release: nil runs memGate's Pace, an error fails the merge.
type stepPace struct {
	*memGate
	entered chan struct{}
	release chan error
}

func (g stepPace) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	g.entered <- struct{}{}
	if err := <-g.release; err != nil {
		return err
	}
	return g.memGate.Pace(ctx, scope, update)
}

// TestFleetNewsOwedWhileResting: news told while merges rest after a
// failure is owed past the merge that read the names before it: that
// merge, ending well, leaves it merged or owed, never neither.
func TestFleetNewsOwedWhileResting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := stepPace{NewGate().(*memGate), make(chan struct{}), make(chan error)}
		f := &fleetNames{gate: gate}
		var n names
		go f.news(context.Background(), &n) // merge 1
		<-gate.entered
		xDone := make(chan struct{})
		go func() { f.news(context.Background(), &n); close(xDone) }() // X waits for 1, will run 2
		synctest.Wait()
		gate.release <- errors.New("redis down") // merge 1 fails: owed=2, resting
		<-gate.entered                           // X's merge 2 has exported n
		req, err := http.NewRequest("GET", "https://api.github.com/search/issues", nil)
		require.NoError(t, err)
		n.learn("api.github.com", &lazyShape{req: req}, "resource search") // Y's news
		n.held("api.github.com", "resource search", time.Now().Add(time.Hour))
		f.news(context.Background(), &n) // resting: owe() keeps owed=2, returns
		gate.release <- nil              // merge 2 succeeds, clears owed
		<-xDone
		var tab *fleetTable
		require.NoError(t, gate.memGate.Pace(context.Background(), fleetNamesScope, func(b []byte) []byte {
			tab, _ = decodeFleetNames(b, time.Now())
			return b
		}))
		told := tab != nil && tab.Scopes["api.github.com"] != nil
		assert.True(t, told || f.owed.Load() != 0, "Y's news neither merged nor owed (owed=%d)", f.owed.Load())
	})
}

// TestFleetUnnamedShapeDoesNotWait: a send of a shape served with no name,
// for which no merge is due, does not wait for a merge under way.
func TestFleetUnnamedShapeDoesNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := stepPace{NewGate().(*memGate), make(chan struct{}), make(chan error)}
		f := &fleetNames{gate: gate}
		var n names
		post, _ := http.NewRequest("POST", "https://discord.com/api/v10/channels/1/messages", nil)
		me, _ := http.NewRequest("GET", "https://discord.com/api/v10/users/@me", nil)
		n.learn("discord.com", &lazyShape{req: post}, "bucket abcd")
		n.servedUnnamed("discord.com", &lazyShape{req: me})
		require.True(t, n.missDue("discord.com", &lazyShape{req: me}, mono(time.Now()))) // merged for it just now
		f.synced.Store(mono(time.Now()))
		go f.news(context.Background(), &n) // someone's merge, slow gate
		<-gate.entered
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
		defer cancel()
		done := make(chan struct{})
		go func() { f.refresh(ctx, &n, "discord.com", &lazyShape{req: me}, false); close(done) }()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		select {
		case <-done:
		default:
			<-done
			t.Errorf("marked unnamed send, not due, waited %v for another's merge", time.Since(start))
		}
		gate.release <- nil
	})
}

// TestFleetNewsBehindAHungGate: news behind a merge whose gate hangs,
// ignoring its context, returns after newsWait, and the news is merged by
// the goroutine that catches up once the gate ends that merge.
func TestFleetNewsBehindAHungGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := stepPace{NewGate().(*memGate), make(chan struct{}), make(chan error)}
		f := &fleetNames{gate: gate}
		var n names
		go f.news(context.Background(), &n)
		<-gate.entered // hung: the gate ignores its context
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { f.news(ctx, &n); close(done) }()
		time.Sleep(time.Minute)
		select {
		case <-done:
		default:
			t.Error("news still waiting a minute past its caller's 2 s deadline")
		}
		assert.NotZero(t, f.owed.Load(), "owed")
		gate.release <- nil
		<-gate.entered // the catching up
		gate.release <- nil
		<-done
		synctest.Wait()
		assert.Zero(t, f.owed.Load(), "merged once the gate ended its merge")
	})
}

// TestFleetMergesRestAfterAFailure: a merge that fails leaves the
// Transport with what it knows, and none is tried for a second, news
// neither (it is owed); the first send after that second merges.
func TestFleetMergesRestAfterAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := stepPace{NewGate().(*memGate), make(chan struct{}), make(chan error)}
		f := &fleetNames{gate: gate}
		var n names
		req := &lazyShape{req: httptest.NewRequest("GET", "https://h/x", nil)}
		done := make(chan struct{})
		go func() {
			f.refresh(context.Background(), &n, "h", req, false) // the first: merges
			close(done)
		}()
		<-gate.entered
		gate.release <- errors.New("redis down")
		<-done
		for _, after := range []time.Duration{0, 500 * time.Millisecond, 400 * time.Millisecond} {
			time.Sleep(after)
			f.refresh(context.Background(), &n, "h", req, false) // resting: no Pace, or entered would block
			f.news(context.Background(), &n)
		}
		assert.NotZero(t, f.owed.Load(), "the news is owed")
		time.Sleep(100 * time.Millisecond) // a second since the failure
		done = make(chan struct{})
		go func() {
			f.refresh(context.Background(), &n, "h", req, false)
			close(done)
		}()
		<-gate.entered
		gate.release <- nil
		<-done
		assert.Zero(t, f.owed.Load(), "told once the second was over")
	})
}
