// Scopes in process: what a Transport keeps of each scope it has sent to,
// beside what its gate keeps.

package heed

import (
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// scopeLocal is what a Transport keeps of one scope in process: its
// adaptive rate limiter and the retry budget of each policy used in it.
// A scope is forgotten once nothing uses it and its state is over
// (quiet), so that a Transport's memory is bounded by the scopes that
// carry state, not by the scopes it has seen.
type scopeLocal struct {
	limiter adaptive
	budgets map[*policy]*retryBudget
	// budgetList holds the budgets too, to range over without a map's
	// iterator, and budgetKeep the longest of their windows. Both, and
	// the map, outlive a reset: the budgets are emptied, not dropped.
	budgetList []*retryBudget
	budgetKeep time.Duration
	known      map[*policy]*known // the Limit of each policy that has one
	// The first policy used in the scope, with its budget and limit:
	// what most scopes, used by one policy, find without a map.
	firstPolicy *policy
	firstBudget *retryBudget
	firstKnown  *known
	waiting     atomic.Int64 // RoundTrips waiting to send
	bypass      bypass       // past the Transport's own gate (bypass.go)

	// The latest hold this Transport set, what the wire check checks
	// against, and when it was set, on the monotonic clock (mono).
	heldUntil   instant
	throttledAt atomic.Int64
	// published: a response of the scope published a quota, whose reset
	// the gate may answer as a wait
	published atomic.Bool

	// What keeps the scope from being forgotten, beside a hold and a
	// quota: the RoundTrips using it, a use since the sweep last passed
	// it, and the last answer that was not delivered at once or that
	// published a quota, on the monotonic clock (mono).
	users   atomic.Int64
	used    atomic.Bool
	stateAt atomic.Int64
	// quotaUntil is the latest reset of a quota the scope published, by
	// mono: the gate keeps the quota until then, and the scope
	// must know it published one (published).
	quotaUntil atomic.Int64
}

// Scopes a Transport keeps when they are quiet, and how long after the last
// answer that was not delivered at once (or that published a quota) a
// scope's state is kept: the wire check's minute, or while it paces or
// caps its sends, rules.PaceKeep, as a shared pace is kept; a retry
// budget's window if longer.
const quietKept = 1024

// scope sets c's scope's in-process state (c.local), counted as in use
// until the RoundTrip calls leaveScope; p's retry budget in it (c.retries,
// nil when p has none), its first attempt counted; p's known limit in it
// (c.known, nil when p has none); and whether the call took a place in the
// scope's bypass, rather than counting as a user (c.fast, bypass.go). A
// call to a scope not registered may go on the calm path instead (calm.go).
func (t *Transport) scope(c *call, p *policy) {
	fast := t.own != nil && p.limit == (Limit{})
	if fast && p.calm {
		// No scope registered: none to look up. The count of scopes
		// registered is read first, as it is under the lock below
		// (calmEnter). A Transport that has registered a scope looks up
		// from then on: the sweep forgets scopes only past quietKept.
		gen := t.registered.Load()
		if t.live.Load() == 0 && t.calmEnter(c, gen) {
			return
		}
	}
	t.scopesMu.RLock()
	sl := t.scopes[c.scope]
	if sl != nil {
		b, k, ok := sl.of(p)
		if ok && !sl.stale(c.startMono) {
			entered := fast && sl.bypass.enter()
			if !entered {
				sl.users.Add(1)
			}
			if !sl.used.Load() {
				sl.used.Store(true)
			}
			t.scopesMu.RUnlock()
			c.local, c.retries, c.known, c.fast = sl, b, k, entered
			c.retries.first(c.startMono)
			return
		}
	}
	gen := t.registered.Load()
	t.scopesMu.RUnlock()
	if sl == nil && fast && p.calm && t.calmEnter(c, gen) {
		return
	}

	t.scopesMu.Lock()
	sl, created := t.registerLocked(p, c.scope)
	if !created && !sl.used.Load() {
		sl.used.Store(true)
	}
	entered := fast && sl.bypass.enter()
	if !entered {
		sl.users.Add(1)
	}
	b, k, _ := sl.of(p)
	t.scopesMu.Unlock()
	c.local, c.retries, c.known, c.fast = sl, b, k, entered
	c.retries.first(c.startMono)
}

// registerLocked returns the in-process state of scope, and whether it
// registered it: a scope not registered is, forgetting up to sweepStep
// quiet ones, and counts in the calm call of the scope that is out, if any
// (adoptLocked). The state has p's retry budget and known limit. The
// caller holds the scopes lock for writing.
func (t *Transport) registerLocked(p *policy, scope string) (*scopeLocal, bool) {
	sl := t.scopes[scope]
	// Whether a scope's state is over is read on time.Now, not a time
	// source's reading (timesource.go): a scope forgotten has no state in
	// the gate.
	now := time.Now()
	if sl != nil && sl.stale(mono(now)) {
		// A pace or cap over, that no sweep came by to forget (calm calls
		// register nothing, and sweep nothing): the scope starts anew, as
		// a scope forgotten and made again does.
		if sl.quiet(now) {
			sl.reset()
			t.readyLocked(scope, sl, now)
		} else {
			// In use: kept, as the sweep keeps it, and looked at again
			// in a minute, not at every call.
			n, keep := mono(now), int64(max(rules.PaceKeep, sl.budgetKeep))
			sl.stateAt.Store(n - keep + int64(time.Minute))
		}
	}
	created := sl == nil
	if created {
		t.order.pass(quietKept, func(k string) bool {
			s := t.scopes[k]
			if s == nil {
				return true
			}
			if s.used.Swap(false) || !s.quiet(now) {
				return false
			}
			delete(t.scopes, k)
			t.live.Add(-1)
			if len(t.spare) < quietKept {
				t.spare = append(t.spare, s)
			}
			return true
		})
		if n := len(t.spare); n > 0 {
			sl = t.spare[n-1]
			t.spare[n-1] = nil
			t.spare = t.spare[:n-1]
			sl.reset()
		} else {
			sl = &scopeLocal{budgets: make(map[*policy]*retryBudget, 1)}
		}
		t.readyLocked(scope, sl, now)
		t.scopes[scope] = sl
		t.order.push(scope)
		// In this order, and before the sightings are looked at: a calm
		// call reads registered, then live, and registered again once
		// it has marked its slot (calm.go); registered counted first, a
		// call could read it new and live still 0, and mark its slot
		// after adoptLocked looked.
		t.live.Add(1)
		t.registered.Add(1)
		if t.own != nil {
			t.adoptLocked(scope, sl, now)
		}
	}
	if p.limit != (Limit{}) && sl.known[p] == nil {
		if sl.known == nil {
			sl.known = make(map[*policy]*known, 1)
		}
		sl.known[p] = newKnown(p.limit)
	}
	if !p.budget.Disabled && sl.budgets[p] == nil {
		if sl.budgets == nil {
			sl.budgets = make(map[*policy]*retryBudget, 1)
		}
		b := newRetryBudget(p.budget)
		sl.budgets[p] = b
		sl.budgetList = append(sl.budgetList, b)
		sl.budgetKeep = max(sl.budgetKeep, b.window())
	}
	if sl.firstPolicy == nil {
		b, k, _ := sl.of(p)
		sl.firstPolicy, sl.firstBudget, sl.firstKnown = p, b, k
	}
	return sl, created
}

// readyLocked readies sl, new or reset, to be scope's at now: its pace
// kept in the gate, if it keeps paces, and its bypass shut while the gate
// keeps state for the scope. The caller holds the scopes lock for writing.
func (t *Transport) readyLocked(scope string, sl *scopeLocal, now time.Time) {
	sl.limiter.line = &sl.waiting
	if t.paces != nil {
		sl.limiter.shared = &sharedPace{gate: t.paces, scope: scope}
	}
	if t.own != nil && t.own.keeps(scope, now) {
		// The gate has state for the scope still (a forgotten scope
		// has none, but for a disagreement of the two on when it
		// ends): its sends go through the gate till it is over.
		sl.bypass.w.Store(bypassShut)
	}
}

// stale reports whether the scope paces or caps its sends on a throttle
// older than its state is kept, at now, by mono: a scope the sweep would
// forget if it were quiet, found by a call. The caller holds the scopes
// lock, to read or to write.
func (sl *scopeLocal) stale(now int64) bool {
	// The answer's time first: the limiter's words share a cache line
	// with its counts of sends, which every call writes.
	at := sl.stateAt.Load()
	if at == 0 || now-at < int64(max(rules.PaceKeep, sl.budgetKeep)) {
		return false
	}
	return sl.limiter.active.Load() || sl.limiter.ceil.on.Load()
}

// of returns p's retry budget and known limit in the scope, and whether
// both are there as p needs them. The caller holds the Transport's scopes
// lock, to read or to write.
func (sl *scopeLocal) of(p *policy) (*retryBudget, *known, bool) {
	if p == sl.firstPolicy {
		return sl.firstBudget, sl.firstKnown, true
	}
	var k *known
	if p.limit != (Limit{}) {
		if k = sl.known[p]; k == nil {
			return nil, nil, false
		}
	}
	if p.budget.Disabled {
		return nil, k, true
	}
	b := sl.budgets[p]
	return b, k, b != nil
}

// reset readies a forgotten scope to be another's: as new, but for its
// retry budgets, emptied. Nothing else holds it: it was quiet when
// forgotten.
func (sl *scopeLocal) reset() {
	for _, b := range sl.budgetList {
		b.reset()
	}
	budgets, list, keep := sl.budgets, sl.budgetList, sl.budgetKeep
	*sl = scopeLocal{} // cleared in place: a literal with fields is built aside and copied
	sl.budgets, sl.budgetList, sl.budgetKeep = budgets, list, keep
}

// leave counts a user done with the scope.
func (sl *scopeLocal) leave() { sl.users.Add(-1) }

// stated records at now an answer that leaves the scope state to keep.
func (sl *scopeLocal) stated(now time.Time) { sl.stateAt.Store(mono(now)) }

// quiet reports whether the scope can be forgotten at now: no RoundTrip
// uses it, no Limit slot is held, and its state is over. The caller holds
// the Transport's scopes lock for writing, so no RoundTrip starts to use it
// meanwhile.
func (sl *scopeLocal) quiet(now time.Time) bool {
	n := mono(now)
	// Places before users: a place only ever turns into a user, and under
	// the write lock none is taken.
	if sl.bypass.taken() || sl.users.Load() != 0 || sl.heldUntil.load().After(now) || sl.quotaUntil.Load() > n {
		return false
	}
	keep := max(wireCheckFor, sl.budgetKeep)
	if sl.limiter.active.Load() || sl.limiter.ceil.on.Load() {
		keep = max(rules.PaceKeep, sl.budgetKeep)
	}
	if at := sl.stateAt.Load(); at != 0 && n-at < int64(keep) {
		return false
	}
	for _, k := range sl.known {
		if !k.quiet(now) {
			return false
		}
	}
	return true
}

// instant is a time kept for atomic use with its monotonic reading, so
// that a hold learned in process is waited out on the monotonic clock: a
// wall clock slewed or stepped meanwhile does not end it early. Setting it
// allocates; a hold is rare.
type instant struct{ p atomic.Pointer[time.Time] }

// load returns the instant; the zero time when none was set.
func (i *instant) load() time.Time {
	if p := i.p.Load(); p != nil {
		return *p
	}
	return time.Time{}
}

// raise sets the instant to t if t is more than slack later than it, and
// reports whether it did.
func (i *instant) raise(t time.Time, slack time.Duration) bool {
	for {
		old := i.p.Load()
		if old != nil && !t.After(old.Add(slack)) {
			return false
		}
		if i.p.CompareAndSwap(old, &t) {
			return true
		}
	}
}
