// Fleet names: what the Transports sharing a gate learned of the limits
// servers name (named.go), kept in the gate, so that each of them knows
// which limit a request counts against before it has seen it answered.

package heed

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// A gate shared by several Transports (WithGate), a fleet's redisgate or
// one NewGate in a process, holds a named limit in a scope of its own, as
// heed's own gate does. A Transport that has not seen a request's shape
// answered would send it into its limit's hold, so the Transports keep
// what they learned in the gate too, as a PaceGate state (fleetNamesScope):
// per request scope, each shape's name, the default resource and its
// votes, and until when each named limit holds. The state is their union:
// each Transport merges all it knows into it, and all it holds into what
// it knows:
//   - before its first send, and then at most once a second;
//   - before the send of a shape it has not seen answered, in a scope whose
//     server names its limits;
//   - when it learns a shape's name anew, or a named limit begins to hold.
//
// A merge that changes nothing writes nothing, but one that finds a limit
// holding rewrites the state every rules.PaceKeep/2, so a gate keeps it
// while the fleet sends. A gate that fails leaves each Transport with what
// it knows. Only a gate that keeps paces (PaceGate) splits named limits;
// with any other, the whole request scope holds, as before.

// fleetNamesScope is the gate scope the fleet's names are kept in: no
// request scope is empty.
const fleetNamesScope = "\x1fnames"

// fleetNamesEvery is how often a Transport merges with the fleet's names,
// at most, but for a shape it has not seen answered.
const fleetNamesEvery = time.Second

// Bounds on the fleet's names, below a Transport's own (named.go), so that
// the state stays small: request scopes, shapes per scope, and named
// limits that hold per scope. Past a bound, what holds is kept (a shape of
// the default resource goes first, as its look-up still finds its name),
// and a shape or scope that does not fit is left to each Transport to
// learn, as a shape new to the fleet is.
const (
	fleetScopesKeep = 64
	fleetShapesKeep = 256
	fleetLiveKeep   = namedLook
)

// fleetTable is the fleet's names, as the gate keeps them (JSON).
type fleetTable struct {
	Scopes map[string]*fleetScope `json:"s"`
}

// fleetScope is the fleet's names of one request scope.
type fleetScope struct {
	At       int64             `json:"t"`           // last change, Unix milliseconds
	Fallback string            `json:"f,omitempty"` // the default resource
	Votes    map[string]int    `json:"v,omitempty"` // resource → shapes the fleet first learned with it
	Shapes   map[string]string `json:"n,omitempty"` // shape → name
	Live     map[string]int64  `json:"l,omitempty"` // name → end of its hold, Unix milliseconds
}

// fleetNames is a Transport's side of the fleet's names.
type fleetNames struct {
	gate   PaceGate
	synced atomic.Int64 // mono count of the last merge ended; 0: none
	mu     sync.Mutex
	busy   chan struct{} // closed when the merge under way ends; nil: none
	again  bool          // news came during the merge under way: merge once more
}

// refresh merges with the fleet's names when due before a send of req in
// scope: none yet, a second since the last, or req's shape never answered
// in a scope whose server names its limits. A call that finds a merge
// under way waits for it, at most while ctx lasts, unless it is due only
// for its second.
func (f *fleetNames) refresh(ctx context.Context, n *names, scope string, req *http.Request) {
	last := f.synced.Load()
	if last == 0 {
		f.sync(ctx, n, true)
		return
	}
	if unseen := n.unseen(scope, req); unseen || mono(time.Now())-last >= int64(fleetNamesEvery) {
		f.sync(ctx, n, unseen)
	}
}

// sync merges n with the fleet's names. A call that finds a merge under
// way waits for it if wait is set; news, a call that does not wait, has
// it merge once more when it ends, since it may have exported n before the
// news.
func (f *fleetNames) sync(ctx context.Context, n *names, wait bool) {
	f.mu.Lock()
	if busy := f.busy; busy != nil {
		if !wait {
			f.again = true
		}
		f.mu.Unlock()
		if wait {
			select {
			case <-busy:
			case <-ctx.Done():
			}
		}
		return
	}
	busy := make(chan struct{})
	f.busy = busy
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), paceTimeout)
	defer cancel()
	for {
		f.merge(ctx, n)
		f.mu.Lock()
		if !f.again || ctx.Err() != nil {
			f.again = false
			f.busy = nil
			f.synced.Store(mono(time.Now())) // failed too: a second before the next
			f.mu.Unlock()
			close(busy)
			return
		}
		f.again = false
		f.mu.Unlock()
	}
}

// merge merges n with the fleet's names, once; a gate that fails leaves n
// as it is.
func (f *fleetNames) merge(ctx context.Context, n *names) {
	mine := n.export(time.Now())
	var merged *fleetTable
	err := f.gate.Pace(ctx, fleetNamesScope, func(state []byte) []byte {
		now := time.Now()
		t, ok := decodeFleetNames(state)
		if !ok {
			t = &fleetTable{Scopes: make(map[string]*fleetScope)}
		}
		changed := t.merge(mine, now)
		merged = t
		if !changed && ok {
			return state
		}
		if len(t.Scopes) == 0 {
			return nil
		}
		b, _ := json.Marshal(t)
		return b
	})
	if err == nil && merged != nil {
		n.absorb(merged, time.Now())
	}
}

// decodeFleetNames reads a gate's state as the fleet's names, and reports
// whether it is such: no state, or one out of bounds or with a name or
// shape heed would not learn, is not, and is replaced at the next merge.
func decodeFleetNames(b []byte) (*fleetTable, bool) {
	if len(b) == 0 {
		return nil, false
	}
	var t fleetTable
	if err := json.Unmarshal(b, &t); err != nil || t.Scopes == nil || len(t.Scopes) > fleetScopesKeep {
		return nil, false
	}
	for scope, s := range t.Scopes {
		if s == nil || scope == "" || len(scope) > 1024 || len(s.Shapes) > fleetShapesKeep ||
			len(s.Votes) > namedVotesKeep || len(s.Live) > fleetLiveKeep ||
			(s.Fallback != "" && !resourceName(s.Fallback)) {
			return nil, false
		}
		for name, v := range s.Votes {
			if !resourceName(name) || v < 1 || v > 1<<30 {
				return nil, false
			}
		}
		for k, name := range s.Shapes {
			if !shapeText(k) || !limitName(name) {
				return nil, false
			}
		}
		for name := range s.Live {
			if !limitName(name) {
				return nil, false
			}
		}
	}
	return &t, true
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

// shapeText reports whether k can be a shape: a method, a space and a
// path of printable ASCII, at most 2 KiB.
func shapeText(k string) bool {
	method, path, ok := strings.Cut(k, " ")
	if !ok || method == "" || len(k) > 2048 {
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
// rules.PaceKeep/2, so that the gate keeps it.
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
			delete(t.Scopes, scope) // unchanged this long: forgotten, as the gate would
			changed = true
		}
	}
	for scope, m := range mine {
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

// merge adds m to s, at ms, and reports whether that changed s. A shape
// new to s votes for its resource; the default is elected from the votes,
// but not while it holds.
func (s *fleetScope) merge(m *fleetScope, ms int64) bool {
	changed := false
	for name, until := range m.Live {
		if until > ms && until > s.Live[name] {
			if _, ok := s.Live[name]; !ok && len(s.Live) >= fleetLiveKeep {
				continue
			}
			if s.Live == nil {
				s.Live = make(map[string]int64)
			}
			s.Live[name], changed = until, true
		}
	}
	for k, name := range m.Shapes {
		old, known := s.Shapes[k]
		if old == name {
			continue
		}
		if !known && len(s.Shapes) >= fleetShapesKeep && !s.forgetShape(ms) {
			continue
		}
		if s.Shapes == nil {
			s.Shapes = make(map[string]string)
		}
		s.Shapes[k], changed = name, true
		if !known && resourceName(name) && (s.Votes[name] > 0 || len(s.Votes) < namedVotesKeep) {
			if s.Votes == nil {
				s.Votes = make(map[string]int)
			}
			s.Votes[name] = min(s.Votes[name]+1, 1<<30)
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

// forgetShape forgets a shape whose named limit does not hold, one of the
// default first, and reports whether there was one.
func (s *fleetScope) forgetShape(ms int64) bool {
	other := ""
	for k, name := range s.Shapes {
		if s.Live[name] > ms {
			continue
		}
		if name == s.Fallback {
			delete(s.Shapes, k)
			return true
		}
		if other == "" {
			other = k
		}
	}
	if other == "" {
		return false
	}
	delete(s.Shapes, other)
	return true
}

// export returns what n knows, in the fleet's form: per request scope, its
// shapes' names, and the named limits that hold at now. Past the fleet's
// bounds, the scopes and shapes that hold come first.
func (n *names) export(now time.Time) map[string]*fleetScope {
	n.mu.RLock()
	defer n.mu.RUnlock()
	ms := now.UnixMilli()
	out := make(map[string]*fleetScope, min(len(n.scopes), fleetScopesKeep))
	for pass := range 2 {
		for scope, sn := range n.scopes {
			if len(out) >= fleetScopesKeep {
				break
			}
			if _, done := out[scope]; done || (pass == 0) != sn.holds(now) {
				continue
			}
			s := &fleetScope{Shapes: make(map[string]string), Live: make(map[string]int64)}
			for name, until := range sn.live {
				if until.After(now) && len(s.Live) < fleetLiveKeep {
					s.Live[name] = max(until.UnixMilli(), ms+1)
				}
			}
			for held := range 2 {
				for k, name := range sn.shapes {
					if len(s.Shapes) >= fleetShapesKeep {
						break
					}
					if (held == 0) == (s.Live[name] > 0) {
						s.Shapes[k] = name
					}
				}
			}
			out[scope] = s
		}
	}
	return out
}

// absorb adds the fleet's names t to what n knows, at now: each shape n
// has not seen answered, and the ends of the holds; the fleet's votes and
// default replace n's, unless n's default holds. It learns a scope or a
// shape only within its own bounds, as learn does.
func (n *names) absorb(t *fleetTable, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	learned := false
	for scope, s := range t.Scopes {
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
			sn = &scopeNames{live: make(map[string]time.Time), shapes: make(map[string]string), votes: make(map[string]int)}
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
		for k, name := range s.Shapes {
			if _, known := sn.shapes[k]; known {
				continue
			}
			if len(sn.shapes) >= namedKeep && !sn.forgetOne(now) {
				continue
			}
			sn.shapes[k] = name
		}
		learned = true
	}
	if learned {
		n.any.Store(true)
	}
}

// unseen reports whether scope's server names its limits and req's shape
// has no name n knows.
func (n *names) unseen(scope string, req *http.Request) bool {
	if !n.any.Load() {
		return false
	}
	n.mu.RLock()
	sn := n.scopes[scope]
	n.mu.RUnlock()
	if sn == nil {
		return false
	}
	k := shape(req)
	n.mu.RLock()
	defer n.mu.RUnlock()
	_, known := sn.shapes[k]
	return !known
}
