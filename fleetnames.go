// Fleet names: what the Transports sharing a gate learned of the limits
// servers name (named.go), kept in the gate, so that each of them knows
// which limit a request counts against before it has seen it answered.

package heed

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/heed-go/heed/internal/rules"
)

// A gate shared by several Transports (WithGate), a fleet's redisgate or
// one NewGate in a process, holds a named limit in a scope of its own, as
// heed's own gate does. A Transport that has not seen a request's shape
// answered would send it into its limit's hold, so the Transports keep
// what they learned in the gate too, as a PaceGate state (fleetNamesScope):
// per request scope, each shape's name and when it was learned, the
// default resource and its votes, and until when each named limit holds.
// The state is their union: each Transport merges all it knows into it,
// and all it holds into what it knows:
//   - before its first send, and then once a second while it sends;
//   - before the send of a shape it has not seen answered, in a scope whose
//     server names its limits: once a second per shape, and again after
//     any wait (a shape served with no name, once a second, waits or not);
//   - once an answer taught it a shape's name anew, or a named limit began
//     to hold, after the gate has the hold: the call waits for a merge
//     begun after its news, two merges at most.
//
// Of two names of a shape, the later wins, but never one whose limit does
// not hold over one whose limit holds. A merge that changes nothing writes
// nothing, but one that finds a limit holding rewrites the state every
// rules.PaceKeep/2, so a gate keeps it while the fleet sends. A gate that
// fails leaves each Transport with what it knows, and merges rest a
// second. Only a gate that keeps paces (PaceGate) splits named limits;
// with any other, the whole request scope holds, as before. See
// docs/pacing.md, "Limits the server names".

// fleetNamesScope is the gate scope the fleet's names are kept in: no
// request scope is empty.
const fleetNamesScope = "\x1fnames"

// fleetNamesEvery is how often a Transport merges with the fleet's names,
// but for news: once a second, and once a second per shape not seen.
const fleetNamesEvery = time.Second

// Bounds on the fleet's names, below a Transport's own (named.go), so that
// the state stays small: request scopes, shapes per scope, and named
// limits that hold per scope; and the longest scope and shape kept. Past a
// bound, what holds is kept (a shape of the default resource goes first,
// as its look-up still finds its name), and a shape or scope that does not
// fit is left to each Transport to learn, as a shape new to the fleet is.
const (
	fleetScopesKeep = 64
	fleetShapesKeep = 256
	fleetLiveKeep   = namedLook
	fleetScopeLen   = 1024
	fleetShapeLen   = 2048
)

// fleetTable is the fleet's names, as the gate keeps them (JSON).
type fleetTable struct {
	Scopes map[string]*fleetScope `json:"s"`
}

// fleetScope is the fleet's names of one request scope.
type fleetScope struct {
	At       int64                 `json:"t"`           // last change, Unix milliseconds
	Fallback string                `json:"f,omitempty"` // the default resource
	Votes    map[string]int        `json:"v,omitempty"` // resource → shapes the fleet first learned with it
	Shapes   map[string]fleetShape `json:"n,omitempty"` // shape → its name
	Live     map[string]int64      `json:"l,omitempty"` // name → end of its hold, Unix milliseconds
}

// fleetShape is a shape's name, and when a Transport learned it from an
// answer, in Unix milliseconds.
type fleetShape struct {
	Name string `json:"n"`
	At   int64  `json:"t"`
}

// fleetNames is a Transport's side of the fleet's names. One merge runs
// at a time; merges are numbered as they begin.
type fleetNames struct {
	gate   PaceGate
	synced atomic.Int64 // mono count of the last merge ended; 0: none
	failed atomic.Int64 // mono count of the last merge that failed; 0: none since one did not
	// owed is the number of the first merge that would tell news that
	// came while merges failed, or timed out; 0: none. The next send
	// merges, and a merge numbered so or later that ends well clears it.
	owed     atomic.Int64
	catching atomic.Bool // a goroutine merges what is owed (catchUp)
	mu       sync.Mutex
	busy     chan struct{} // closed when the merge under way ends; nil: none
	begun    int64         // merges begun
	ended    int64         // the number of the last merge ended
}

// refresh merges with the fleet's names when due before a send of req in
// scope: none yet, a second since the last, news owed, or req's shape not
// seen answered in a scope whose server names its limits (once a second
// per shape, but for a call that waited since it last looked). A call
// whose shape is not seen, or that comes before the first merge ended,
// and finds a merge under way, waits for it, at most while ctx lasts.
func (f *fleetNames) refresh(ctx context.Context, n *names, scope string, req *lazyShape, waited bool) {
	now := mono(time.Now())
	if f.resting(now) {
		return
	}
	synced := f.synced.Load()
	due := synced == 0 || now-synced >= int64(fleetNamesEvery) || f.owed.Load() != 0
	unseen, unnamed := n.unseen(scope, req)
	if !due && !unseen {
		return
	}
	if !due && unnamed {
		// Served with no name: merged for once a second, waits or not,
		// and never waited for.
		if !n.missDue(scope, req, now) {
			return
		}
		due = true
	}
	f.mu.Lock()
	if busy := f.busy; busy != nil {
		f.mu.Unlock()
		if unseen && !unnamed || synced == 0 {
			select {
			case <-busy:
			case <-ctx.Done():
			}
		}
		return
	}
	if !due && !n.missDue(scope, req, now) && !waited {
		f.mu.Unlock()
		return
	}
	f.run(ctx, n) // unlocks f.mu
}

// news merges with the fleet's names what n learned from an answer: it
// returns once a merge begun after it was called has ended, running one
// itself when none is under way, and waiting for the one under way, which
// may have read n before the news, otherwise. Its caller's context does
// not cut that short, lest the news be lost; a gate that does not end a
// merge within newsWait does: the news is then owed, and one goroutine
// merges it once the gate does end the merge under way. While merges
// fail, the news is owed to the next send's merge.
func (f *fleetNames) news(ctx context.Context, n *names) {
	if f.resting(mono(time.Now())) {
		f.owe()
		return
	}
	limit := time.NewTimer(newsWait)
	defer limit.Stop()
	f.mu.Lock()
	for target := f.begun + 1; f.ended < target; f.mu.Lock() {
		if busy := f.busy; busy != nil {
			f.mu.Unlock()
			select {
			case <-busy:
			case <-limit.C:
				f.owe()
				f.catchUp(n)
				return
			}
			continue
		}
		f.run(ctx, n) // unlocks f.mu
	}
	f.mu.Unlock()
}

// newsWait bounds how long a call waits to tell its news: two merges.
const newsWait = 2 * paceTimeout

// catchUp starts, unless one runs, the goroutine that merges the news
// owed once the merge under way ends, however long the gate takes.
func (f *fleetNames) catchUp(n *names) {
	if !f.catching.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer f.catching.Store(false)
		for f.owed.Load() != 0 {
			f.mu.Lock()
			if busy := f.busy; busy != nil {
				f.mu.Unlock()
				<-busy
				continue
			}
			if f.resting(mono(time.Now())) {
				f.mu.Unlock()
				return // the next send's merge tells it
			}
			f.run(context.Background(), n) // unlocks f.mu
		}
	}()
}

// resting reports whether a merge failed less than fleetNamesEvery before
// now, a mono count: none is tried meanwhile.
func (f *fleetNames) resting(now int64) bool {
	failed := f.failed.Load()
	return failed != 0 && now-failed < int64(fleetNamesEvery)
}

// owe records news that no merge begun yet will tell.
func (f *fleetNames) owe() {
	f.mu.Lock()
	f.owed.Store(max(f.owed.Load(), f.begun+1))
	f.mu.Unlock()
}

// run begins a merge, called with f.mu held and no merge under way, which
// it unlocks; it returns once the merge has ended, or panicked.
func (f *fleetNames) run(ctx context.Context, n *names) {
	f.begun++
	number := f.begun
	busy := make(chan struct{})
	f.busy = busy
	f.mu.Unlock()
	ok := false
	defer func() {
		now := mono(time.Now())
		f.mu.Lock()
		f.ended = number
		f.synced.Store(now)
		if ok {
			f.failed.Store(0)
			if owed := f.owed.Load(); owed != 0 && number >= owed {
				f.owed.Store(0)
			}
		} else {
			f.failed.Store(now)
			f.owed.Store(max(f.owed.Load(), number+1)) // what it would have told, the next merge tells
		}
		f.busy = nil
		f.mu.Unlock()
		close(busy)
	}()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), paceTimeout)
	defer cancel()
	ok = f.merge(ctx, n)
}

// merge merges n with the fleet's names, once, and reports whether the
// gate took part; one that fails leaves n as it is.
func (f *fleetNames) merge(ctx context.Context, n *names) bool {
	mine := n.export(time.Now())
	var merged *fleetTable
	err := f.gate.Pace(ctx, fleetNamesScope, func(state []byte) []byte {
		now := time.Now()
		t, clean := decodeFleetNames(state, now)
		changed := t.merge(mine, now)
		merged = t
		if !changed && clean {
			return state
		}
		if len(t.Scopes) == 0 {
			return nil
		}
		b, _ := json.Marshal(t)
		return b
	})
	if err != nil {
		return false
	}
	if merged != nil {
		n.absorb(merged, time.Now())
	}
	return true
}

// Bounds on the times in the fleet's names, past the reading clock: a
// name learned by a clock ahead, or a state written by anything else, is
// dated fleetAhead ahead at most, so that a later name can still win
// within that; a hold ends fleetLiveAhead ahead at most.
const (
	fleetAhead     = time.Minute
	fleetLiveAhead = DefaultMaxHold
)

// decodeFleetNames reads a gate's state as the fleet's names at now, and
// reports whether it read all of it: what is not JSON reads as no names,
// and a scope, shape, name or count that heed would not keep is left out,
// as is what is past a bound; a time too far ahead is read as the bound.
// The next merge then writes what was read.
func decodeFleetNames(b []byte, now time.Time) (*fleetTable, bool) {
	t := &fleetTable{Scopes: make(map[string]*fleetScope)}
	if len(b) == 0 {
		return t, b == nil
	}
	var in fleetTable
	if err := json.Unmarshal(b, &in); err != nil || in.Scopes == nil {
		return t, false
	}
	clean := true
	ahead, liveAhead := now.Add(fleetAhead).UnixMilli(), now.Add(fleetLiveAhead).UnixMilli()
	for scope, s := range in.Scopes {
		if s == nil || !fleetScopeName(scope) || len(t.Scopes) >= fleetScopesKeep {
			clean = false
			continue
		}
		out := &fleetScope{At: s.At}
		if s.Fallback != "" {
			if resourceName(s.Fallback) {
				out.Fallback = s.Fallback
			} else {
				clean = false
			}
		}
		var whole [3]bool
		out.Votes, whole[0] = keptOf(s.Votes, namedVotesKeep, func(name string, v int) bool {
			return resourceName(name) && v >= 1 && v <= 1<<30
		})
		out.Shapes, whole[1] = keptOf(s.Shapes, fleetShapesKeep, func(k string, sh fleetShape) bool {
			return shapeText(k) && limitName(sh.Name)
		})
		out.Live, whole[2] = keptOf(s.Live, fleetLiveKeep, func(name string, _ int64) bool { return limitName(name) })
		clean = clean && whole == [3]bool{true, true, true}
		for k, sh := range out.Shapes {
			if sh.At > ahead {
				out.Shapes[k], clean = fleetShape{sh.Name, ahead}, false
			}
		}
		for name, until := range out.Live {
			if until > liveAhead {
				out.Live[name], clean = liveAhead, false
			}
		}
		t.Scopes[scope] = out
	}
	return t, clean
}

// keptOf returns the entries of in that keep says are fit, at most bound
// of them (nil: none), and whether that is all of in.
func keptOf[V any](in map[string]V, bound int, keep func(string, V) bool) (map[string]V, bool) {
	var out map[string]V
	for k, v := range in {
		if !keep(k, v) || len(out) >= bound {
			continue
		}
		if out == nil {
			out = make(map[string]V, min(len(in), bound))
		}
		out[k] = v
	}
	return out, len(out) == len(in)
}

// fleetScopeName reports whether key names a scope that fits the fleet's
// names (fleetKey).
func fleetScopeName(key string) bool {
	scope, ok := scopeOfKey(key)
	return ok && scope != "" && len(scope) <= fleetScopeLen
}

// fleetKeyMark begins the key of a scope that is not valid UTF-8, which
// JSON would change, or that begins so itself: the mark, then the scope's
// bytes in unpadded URL-safe base64.
const fleetKeyMark = "\x00"

// fleetKey is scope's key in the fleet's names.
func fleetKey(scope string) string {
	if utf8.ValidString(scope) && !strings.HasPrefix(scope, fleetKeyMark) {
		return scope
	}
	return fleetKeyMark + base64.RawURLEncoding.EncodeToString([]byte(scope))
}

// scopeOfKey is the scope key names (fleetKey), and whether it names one.
func scopeOfKey(key string) (string, bool) {
	if !strings.HasPrefix(key, fleetKeyMark) {
		return key, utf8.ValidString(key)
	}
	b, err := base64.RawURLEncoding.DecodeString(key[len(fleetKeyMark):])
	return string(b), err == nil
}

// limitName reports whether name is one serverName gives.
func limitName(name string) bool {
	kind, token, ok := strings.Cut(name, " ")
	return ok && (kind == "resource" || kind == "bucket") && nameToken(token)
}

// resourceName reports whether name is a resource serverName gives, which
// alone can be a default.
func resourceName(name string) bool {
	return strings.HasPrefix(name, "resource ") && limitName(name)
}

// shapeText reports whether k is a shape that fits the fleet's names: a
// method, a space and a path of printable ASCII, at most fleetShapeLen
// bytes in all.
func shapeText(k string) bool {
	method, path, ok := strings.Cut(k, " ")
	if !ok || method == "" || len(k) > fleetShapeLen {
		return false
	}
	for i := 0; i < len(path); i++ {
		if path[i] <= ' ' || path[i] >= 0x7f {
			return false
		}
	}
	return nameToken(method)
}

// merge adds mine, a Transport's names, to the fleet's, at now, and
// reports whether that changed them. What has stopped holding is
// forgotten; a scope that holds has its change time renewed every
// rules.PaceKeep/2, so that the gate keeps it; one unchanged for
// rules.PaceKeep with nothing held is forgotten, as the gate would.
func (t *fleetTable) merge(mine map[string]*fleetScope, now time.Time) bool {
	ms := now.UnixMilli()
	changed := false
	for scope, s := range t.Scopes {
		for name, until := range s.Live {
			if until <= ms {
				delete(s.Live, name)
				changed = true
			}
		}
		if len(s.Live) > 0 && ms-s.At >= (rules.PaceKeep/2).Milliseconds() {
			s.At, changed = ms, true
		}
		if len(s.Live) == 0 && mine[scope] == nil && ms-s.At >= rules.PaceKeep.Milliseconds() {
			delete(t.Scopes, scope)
			changed = true
		}
	}
	for scope, m := range mine {
		if !fleetScopeName(scope) {
			continue
		}
		s := t.Scopes[scope]
		if s == nil {
			if len(t.Scopes) >= fleetScopesKeep && !t.forgetOne() {
				continue
			}
			s = &fleetScope{}
			t.Scopes[scope] = s
		}
		if s.merge(m, ms) {
			s.At, changed = ms, true
		}
	}
	return changed
}

// forgetOne forgets the scope changed longest ago of those none of whose
// named limits holds, and reports whether there was one.
func (t *fleetTable) forgetOne() bool {
	oldest, at := "", int64(0)
	for scope, s := range t.Scopes {
		if len(s.Live) == 0 && (oldest == "" || s.At < at) {
			oldest, at = scope, s.At
		}
	}
	if oldest == "" {
		return false
	}
	delete(t.Scopes, oldest)
	return true
}

// merge adds m to s, at ms, and reports whether that changed s. Of two
// names of a shape, the one learned later wins; a shape new to s votes for
// its resource; the default is elected from the votes, but not while it
// holds.
func (s *fleetScope) merge(m *fleetScope, ms int64) bool {
	changed := false
	for name, until := range m.Live {
		if until > ms && until > s.Live[name] && limitName(name) {
			if _, ok := s.Live[name]; !ok && len(s.Live) >= fleetLiveKeep {
				continue
			}
			if s.Live == nil {
				s.Live = make(map[string]int64)
			}
			s.Live[name], changed = until, true
		}
	}
	for k, sh := range m.Shapes {
		old, known := s.Shapes[k]
		if old.Name == sh.Name && old.At >= sh.At || !shapeText(k) || !limitName(sh.Name) ||
			known && old.Name != sh.Name && !later(old, sh, s.Live, ms) {
			continue
		}
		if !known && len(s.Shapes) >= fleetShapesKeep && !s.forgetShape(sh.At, ms) {
			continue
		}
		if s.Shapes == nil {
			s.Shapes = make(map[string]fleetShape)
		}
		if old.Name == sh.Name {
			s.Shapes[k] = sh // dated anew: no news, and no vote
			continue
		}
		s.Shapes[k], changed = sh, true
		if !known && resourceName(sh.Name) && (s.Votes[sh.Name] > 0 || len(s.Votes) < namedVotesKeep) {
			if s.Votes == nil {
				s.Votes = make(map[string]int)
			}
			s.Votes[sh.Name] = min(s.Votes[sh.Name]+1, 1<<30)
		}
	}
	if s.Live[s.Fallback] <= ms {
		// Not while the default holds: the shapes never seen that it
		// holds would go unheld.
		if f := electFrom(s.Votes); f != s.Fallback {
			s.Fallback, changed = f, true
		}
	}
	return changed
}

// later reports whether a shape's name sh, learned elsewhere, takes the
// place of its name old, at ms, live holding the ends of the named limits'
// holds: if learned later, but never a name that does not hold over one
// that does, since the shape's sends would go into that hold. (Discord
// counts a route in two buckets, by the age of the message it deletes: a
// shape is then held while either holds.)
func later(old, sh fleetShape, live map[string]int64, ms int64) bool {
	if live[old.Name] > ms && live[sh.Name] <= ms {
		return false
	}
	return sh.At > old.At
}

// forgetShape forgets the shape learned longest ago of those whose named
// limit does not hold, one of the default first, if learned before at, so
// that the fleet keeps the shapes learned latest, and reports whether it
// forgot one.
func (s *fleetScope) forgetShape(at, ms int64) bool {
	var oldest, oldestDefault string
	for k, sh := range s.Shapes {
		if s.Live[sh.Name] > ms {
			continue
		}
		if sh.Name == s.Fallback && (oldestDefault == "" || sh.At < s.Shapes[oldestDefault].At) {
			oldestDefault = k
		}
		if oldest == "" || sh.At < s.Shapes[oldest].At {
			oldest = k
		}
	}
	if oldestDefault != "" && s.Shapes[oldestDefault].At < at {
		oldest = oldestDefault
	}
	if oldest == "" || s.Shapes[oldest].At >= at {
		return false
	}
	delete(s.Shapes, oldest)
	return true
}

// export returns what n knows, in the fleet's form: per request scope, its
// shapes' names, and the named limits that hold at now. Past the fleet's
// bounds, it keeps the scopes that hold, then those with the shapes it
// came to know latest, and, in each, the shapes whose limits hold, then
// those it came to know latest: the same choice at each merge while it
// learns no new shape, however often answers date the names, so that
// merging it changes nothing then.
func (n *names) export(now time.Time) map[string]*fleetScope {
	n.mu.RLock()
	defer n.mu.RUnlock()
	ms := now.UnixMilli()
	type ranked struct {
		key    string
		held   bool
		latest int64
		sn     *scopeNames
	}
	scopes := make([]ranked, 0, len(n.scopes))
	for scope, sn := range n.scopes {
		if key := fleetKey(scope); fleetScopeName(key) {
			scopes = append(scopes, ranked{key: key, held: sn.holds(now), sn: sn})
		}
	}
	if len(scopes) > fleetScopesKeep {
		for i := range scopes {
			for _, l := range scopes[i].sn.shapes {
				scopes[i].latest = max(scopes[i].latest, l.first)
			}
		}
		slices.SortFunc(scopes, func(a, b ranked) int {
			return cmp.Or(heldFirst(a.held, b.held), cmp.Compare(b.latest, a.latest), strings.Compare(a.key, b.key))
		})
		scopes = scopes[:fleetScopesKeep]
	}
	out := make(map[string]*fleetScope, len(scopes))
	for _, r := range scopes {
		s := &fleetScope{Shapes: make(map[string]fleetShape, min(len(r.sn.shapes), fleetShapesKeep)), Live: make(map[string]int64)}
		for name, until := range r.sn.live {
			if until.After(now) && len(s.Live) < fleetLiveKeep {
				s.Live[name] = max(until.UnixMilli(), ms+1)
			}
		}
		if len(r.sn.shapes) <= fleetShapesKeep {
			for k, l := range r.sn.shapes {
				if l.name != "" && shapeText(k) {
					s.Shapes[k] = fleetShape{l.name, l.at}
				}
			}
			out[r.key] = s
			continue
		}
		type shaped struct {
			k    string
			l    learned
			held bool
		}
		shapes := make([]shaped, 0, len(r.sn.shapes))
		for k, l := range r.sn.shapes {
			if l.name != "" && shapeText(k) {
				shapes = append(shapes, shaped{k, l, s.Live[l.name] > 0})
			}
		}
		slices.SortFunc(shapes, func(a, b shaped) int {
			return cmp.Or(heldFirst(a.held, b.held), cmp.Compare(b.l.first, a.l.first), strings.Compare(a.k, b.k))
		})
		for _, sh := range shapes[:min(len(shapes), fleetShapesKeep)] {
			s.Shapes[sh.k] = fleetShape{sh.l.name, sh.l.at}
		}
		out[r.key] = s
	}
	return out
}

// heldFirst orders what holds before what does not.
func heldFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// absorb adds the fleet's names t to what n knows, at now: each shape's
// name learned later than n's, and the ends of the holds; the fleet's
// votes and default replace n's, unless n's default holds. It learns a
// scope or a shape only within its own bounds, as learn does.
func (n *names) absorb(t *fleetTable, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	some := false
	for key, s := range t.Scopes {
		scope, ok := scopeOfKey(key)
		if !ok {
			continue
		}
		sn := n.scopes[scope]
		if sn == nil {
			if len(s.Shapes) == 0 && s.Fallback == "" && len(s.Live) == 0 {
				continue
			}
			if n.scopes == nil {
				n.scopes = make(map[string]*scopeNames)
			}
			if len(n.scopes) >= namedScopesKeep && !n.forgetScope(now) {
				continue
			}
			sn = newScopeNames()
			n.scopes[scope] = sn
		}
		for name, ms := range s.Live {
			if until := time.UnixMilli(ms); until.After(now) && until.After(sn.live[name]) {
				if _, ok := sn.live[name]; ok || len(sn.live) < namedLook {
					sn.live[name] = until
				}
			}
		}
		if !sn.live[sn.fallback].After(now) {
			clear(sn.votes)
			for name, v := range s.Votes {
				sn.votes[name] = v
			}
			sn.fallback = s.Fallback
		}
		for k, sh := range s.Shapes {
			l, known := sn.shapes[k]
			switch {
			case known && l.name == sh.Name:
				if sh.At > l.at {
					sn.shapes[k] = learned{sh.Name, sh.At, l.first}
				}
				continue
			case known && sn.live[l.name].After(now) && !sn.live[sh.Name].After(now):
				continue // as later does: not out of a hold
			case known && l.at >= sh.At:
				continue
			case !known && len(sn.shapes) >= namedKeep && !sn.forgetOne(now):
				continue
			}
			first := l.first
			if !known {
				first = sh.At // when the fleet learned it: Transports rank it alike
			}
			sn.shapes[k] = learned{sh.Name, sh.At, first}
		}
		some = true
	}
	if some {
		n.any.Store(true)
	}
}

// unseen reports whether scope's server names its limits and req's shape
// has no name n knows, and whether, so, it was served with no name.
func (n *names) unseen(scope string, req *lazyShape) (unseen, unnamed bool) {
	if !n.any.Load() {
		return false, false
	}
	n.mu.RLock()
	sn := n.scopes[scope]
	n.mu.RUnlock()
	if sn == nil {
		return false, false
	}
	k := req.get()
	n.mu.RLock()
	defer n.mu.RUnlock()
	if _, known := sn.shapes[k]; known {
		return false, false
	}
	return true, sn.misses[k] < 0
}

// unnamedMark marks, in scopeNames.misses, a shape the server served with
// no name (Discord's routes that count only against the global limit),
// as a negative time there: it has no name for the fleet's names to give,
// so its sends merge for it once a second at most, whether they waited or
// not.
const unnamedMark = -1

// servedUnnamed records that scope's server, which names its limits,
// served req, not from a cache, with no name.
func (n *names) servedUnnamed(scope string, req *lazyShape) {
	if !n.any.Load() {
		return
	}
	n.mu.RLock()
	sn := n.scopes[scope]
	n.mu.RUnlock()
	if sn == nil {
		return
	}
	k := req.get()
	n.mu.RLock()
	_, known := sn.shapes[k]
	marked := sn.misses[k] < 0
	n.mu.RUnlock()
	if known || marked {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, known := sn.shapes[k]; known {
		return
	}
	at, ok := sn.misses[k]
	if !ok && (sn.misses == nil || len(sn.misses) >= namedLook) {
		sn.misses = make(map[string]int64)
	}
	sn.misses[k] = min(-abs(at), unnamedMark) // merged for it when it was last missed, if it was
}

// missDue reports whether a merge is due for a send of req's shape, not
// seen answered with a name in scope, at now (a mono count): none for it
// in the last fleetNamesEvery. It records now as that merge's time,
// negated for a shape served with no name.
func (n *names) missDue(scope string, req *lazyShape, now int64) bool {
	k := req.get()
	n.mu.Lock()
	defer n.mu.Unlock()
	sn := n.scopes[scope]
	if sn == nil {
		return false
	}
	at, ok := sn.misses[k]
	if ok && now-abs(at) < int64(fleetNamesEvery) {
		return false
	}
	if !ok && (sn.misses == nil || len(sn.misses) >= namedLook) {
		sn.misses = make(map[string]int64)
	}
	if at < 0 {
		now = -now
	}
	sn.misses[k] = now
	return true
}

// abs is |v|.
func abs(v int64) int64 { return max(v, -v) }
