// The calm path: a call alone in a scope the Transport keeps nothing of,
// which keeps nothing of the scope either unless its answer or another call
// gives it something to keep.

package heed

import (
	"hash/maphash"
	"sync/atomic"
	"time"
)

// The calm path. A Transport keeps a scope (scope.go) for what it must
// remember of it: a hold, a quota, a pace, a cap, retries, the sends in
// flight beside each other. A call to a scope it keeps nothing of, with a
// policy that states no Limit, through heed's own gate while that gate keeps
// nothing of the scope, has none of that to share while it is alone. It
// goes on an empty scope that no call writes to (calmScope), never
// registered, and marks a slot of the Transport's sightings with its scope's hash while it
// is out. So a crawler or a webhook sender that calls many hosts one at a
// time keeps no state per host, and its calls cost the same whatever the
// number of hosts.
//
// The call stops being calm, and registers the scope, counting itself in it
// as a call of the bypass (bypass.go) with its send in flight (join), when:
//   - another call of the scope comes while it is out: that call finds the
//     slot marked, registers the scope and counts the calm call in it
//     (adopt), so that the two see each other in flight; the calm call
//     joins the scope at its next step (its admission, its answer, or its
//     end);
//   - its answer leaves anything to keep: anything but a delivered answer
//     (or a terminal one) that publishes no quota, room or named limit;
//   - the server named a limit its request is in (named.go).
//
// A calm call's first attempt is not counted in the scope's retry budget,
// as a scope forgotten forgets its count: a policy whose Budget has no
// floor (MinPerSecond negative), for which that count is all its retries,
// is never calm. The adaptive limiter's measured rate starts when the scope
// is registered.

// calmSlots is the number of slots in a Transport's sightings: calm calls
// out at once, past which a call whose slot is taken registers its scope.
const calmSlots = 1024

// The low bits of a slot: its call is out, and another call of its scope
// registered the scope and counted the call in it.
const (
	sightOut     = 1
	sightAdopted = 2
	sightTag     = ^uint64(sightOut | sightAdopted)
)

// sightings marks the scopes that have a calm call out, by hash, one per
// slot. Safe for concurrent use.
type sightings struct {
	seed  maphash.Seed
	slots [calmSlots]atomic.Uint64
	// starts holds, by slot, when its calm call started, by mono: the
	// scope's first send, once another call counts it in (adoptLocked)
	starts [calmSlots]atomic.Int64
}

// tag returns scope's hash as a slot marks it, never zero.
func (s *sightings) tag(scope string) uint64 {
	h := maphash.String(s.seed, scope) & sightTag
	if h == 0 {
		h = sightTag
	}
	return h
}

// slot returns the slot of tag.
func (s *sightings) slot(tag uint64) *atomic.Uint64 {
	return &s.slots[(tag>>2)%calmSlots]
}

// start returns the word that holds when the calm call of tag's slot
// started.
func (s *sightings) start(tag uint64) *atomic.Int64 {
	return &s.starts[(tag>>2)%calmSlots]
}

// calmScope is the scope every calm call goes on: empty, and never
// written. Nothing a calm call does writes to its scope: it takes no place,
// counts no send, records no answer (the bypass's place, slow, run's
// limiter calls and leaveScope skip it), and anything that would joins the
// scope first. TestCalmScopeStaysEmpty checks that it stays as it is.
var calmScope scopeLocal

// calmEnter puts c on the calm path, and reports whether it did: its slot
// was free and the scope was not registered meanwhile. gen is the count of
// scopes registered as the scope was looked for and not found, or, read
// before, as no scope was registered at all (Transport.scope). The caller
// has c.scope set and the policy checked (policy.calm, Transport.own).
func (t *Transport) calmEnter(c *call, gen uint64) bool {
	tag := t.sights.tag(c.scope)
	slot := t.sights.slot(tag)
	if slot.Load() != 0 {
		return false
	}
	// Written before the mark, so that a call that counts this one in
	// reads it (at worst another's that marked the slot at the same
	// moment, and lost it).
	t.sights.start(tag).Store(c.startMono)
	if !slot.CompareAndSwap(0, tag|sightOut) {
		return false
	}
	// A scope registered since it was looked for was registered before
	// the slot was marked, or saw the mark (adoptLocked): registering
	// counts up gen before it looks at the slot.
	raced := t.registered.Load() != gen
	if raced || t.own.size.Load() != 0 && t.own.keeps(c.scope, time.Now()) {
		if slot.CompareAndSwap(tag|sightOut, 0) {
			return false
		}
		// Adopted by the call that registered the scope: this one
		// joins it, to be admitted there.
		c.calm, c.local, c.lent = tag, nil, false
		c.join(joinUnsent)
		return true
	}
	// fast: admitted as a call of the bypass is, with no place to take.
	c.local, c.retries, c.known, c.fast = &calmScope, nil, nil, true
	c.calm, c.lent = tag, true
	return true
}

// adoptLocked counts in sl, just registered as scope, the calm call of the
// scope that is out, if there is one: its place in the bypass, or a send in
// flight in the gate if the bypass is shut, and its send in flight in the
// limiter. The call joins sl at its next step (join). The caller holds the
// scopes lock for writing, and counted up t.registered.
func (t *Transport) adoptLocked(scope string, sl *scopeLocal, now time.Time) {
	tag := t.sights.tag(scope)
	slot := t.sights.slot(tag)
	if slot.CompareAndSwap(tag|sightOut, tag|sightOut|sightAdopted) {
		t.countCalm(scope, sl, now)
		// The calm call's send is the scope's first: the release counts
		// the sends served from it (release.go).
		sl.limiter.backdate(t.sights.start(tag).Load())
	}
}

// countCalm counts a calm call in sl, its scope's registered state: its
// place in the bypass, or a send in flight in the gate if the bypass is
// shut, and its send in flight in the limiter. The caller holds the scopes
// lock for writing.
func (t *Transport) countCalm(scope string, sl *scopeLocal, now time.Time) {
	if sl.bypass.w.Add(1)&bypassShut != 0 {
		// Shut before the place was counted: the gate counts it as a
		// send in flight, as shut does the places taken.
		t.own.place(scope, now)
	}
	sl.limiter.adopted()
}

// Where a calm call joins its scope: before its send is made, with its
// answer in hand, or as it ends.
const (
	joinUnsent = iota
	joinAnswered
	joinEnd
)

// join ends c's calm path: the scope is registered (by c, if no other call
// did) and c goes on in it as a call of its bypass, its place and its send
// counted there (adoptLocked). Before its send (joinUnsent), or as it ends
// with none out (joinEnd), its send is taken back from the limiter's count
// in flight, freeing a slot under the learned cap; a send that went is
// counted gone too. A call ending with its slot not adopted has nothing to
// count, and only frees the slot.
func (c *call) join(at int) {
	t := c.transport
	tag := c.calm
	c.calm = 0
	slot := t.sights.slot(tag)
	if at == joinEnd && slot.CompareAndSwap(tag|sightOut, 0) {
		return
	}
	t.scopesMu.Lock()
	sl, _ := t.registerLocked(c.policy, c.scope) // adopts c, registering it
	if slot.Load()&sightAdopted == 0 {
		// Not adopted, and the scope registered: never so (calmEnter
		// checks that none was meanwhile), but counted all the same.
		t.countCalm(c.scope, sl, time.Now())
	}
	slot.Store(0) // adopted: the slot is c's to free
	b, k, _ := sl.of(c.policy)
	t.scopesMu.Unlock()
	switch {
	case at == joinAnswered || at == joinEnd && !c.outAt.IsZero():
		// Its send went: gone as well as in flight, and answered as a
		// registered call's is (run, or end as the inner transport
		// panicked).
		sl.limiter.flight.went()
		sl.limiter.backdate(mono(c.outAt))
	default:
		sl.limiter.flight.sub()
		if sl.limiter.ceil.on.Load() {
			// A slot under the learned cap is free: the sends waiting
			// for one are told, as an answer tells them.
			sl.limiter.ceil.answer()
		}
	}
	// calmScope is left in one step: no path sees it as registered.
	c.local, c.fast, c.lent = sl, true, false
	if at != joinEnd {
		c.retries, c.known = b, k
		c.retries.first(c.startMono)
	}
}

// calmAnswer ends c's calm path at an answer that leaves nothing to keep:
// its slot is freed, unless another call adopted it meanwhile; it reports
// whether c stays calm to its end.
func (c *call) calmAnswer() bool {
	tag := c.calm
	if !c.transport.sights.slot(tag).CompareAndSwap(tag|sightOut, 0) {
		return false
	}
	c.calm = 0
	return true
}

// calmAdopted reports whether a call of c's scope registered it, and
// counted c in it, since c went on the calm path.
func (c *call) calmAdopted() bool {
	return c.transport.sights.slot(c.calm).Load()&sightAdopted != 0
}
