// The bypass: how a scope's sends pass heed's own gate without its lock
// while the gate keeps nothing for the scope.

package heed

import (
	"sync/atomic"
	"time"
)

// bypass lets a scope's sends past a Transport's own gate while the gate
// has no hold, quota or count for the scope: the common scope, whose
// answers are all delivered, then costs its sends no lock and no map. Its
// word counts the places taken in it and not yet given back, and has
// bypassShut set once the gate keeps state for the scope; from then on
// every send is admitted by the gate, which counts the places still taken
// as sends in flight, until the scope is idle in the gate again (reopen).
//
// A place is taken by a send (enter), or by a whole call (fast): a call
// to a scope whose bypass is open, with a policy that states no Limit,
// takes its place as it finds its scope, and gives it back as it ends,
// so that a delivered call touches one word once each way. A place also
// keeps the scope from being forgotten, as a user does. A call whose
// send cannot use its place (the bypass shut, or the send is in a limit
// the server named) gives it back (call.slow) and is a user from then on.
//
// Everything that gives the gate state for the scope shuts the bypass
// first: a hold (call.hold) and a published quota (call.done). A scope
// that is forgotten has none, so a new one starts open, unless the gate
// says otherwise (Transport.scope). Safe for concurrent use.
type bypass struct{ w atomic.Int64 }

// bypassShut marks a shut bypass in its word.
const bypassShut = int64(1) << 62

// enter admits a send through the bypass, and reports whether it did: not
// when it is shut.
func (b *bypass) enter() bool {
	for {
		w := b.w.Load()
		if w&bypassShut != 0 {
			return false
		}
		if b.w.CompareAndSwap(w, w+1) {
			return true
		}
	}
}

// leave records the answer to a send enter admitted, and reports whether
// the bypass is still open. When it is not, the gate counted the send as
// in flight as it shut, and must hear of its answer.
func (b *bypass) leave() bool { return b.w.Add(-1)&bypassShut == 0 }

// shut reports whether the bypass is shut.
func (b *bypass) shut() bool { return b.w.Load()&bypassShut != 0 }

// taken reports whether any place in the bypass is taken.
func (b *bypass) taken() bool { return b.w.Load()&^bypassShut != 0 }

// slow gives back the call's place in its scope's bypass: the call is a
// user of the scope from then on, and its sends are admitted one by one.
// It reports whether the gate had counted the place as a send in flight,
// as the bypass shut: the caller then tells the gate of its answer, or
// that it was not sending (memGate.unsent).
func (c *call) slow() bool {
	c.fast = false
	if c.lent {
		return false // calmScope: no place taken, no user counted (calm.go)
	}
	c.local.users.Add(1) // before the place is given back: the scope is never unused meanwhile
	return !c.local.bypass.leave()
}

// leaveScope is a call done with its scope: it gives back its place in the
// bypass, or counts a user gone.
func (c *call) leaveScope() {
	if c.lent {
		// Calm to its end: its scope was never registered.
		c.lent, c.fast, c.local = false, false, nil
		return
	}
	if !c.fast {
		c.local.leave()
		return
	}
	c.fast = false
	if !c.local.bypass.leave() {
		// Counted as a send as the bypass shut: before the call sent, or
		// once its send was answered (call.done answers to the gate for a
		// send out as the bypass shut).
		c.transport.own.unsent(c.scope, time.Now())
	}
}

// shut shuts scope's bypass b, if open, and counts the places taken in it
// as sends in flight in the gate.
func (g *memGate) shut(scope string, b *bypass, now time.Time) {
	if b.shut() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shutLocked(scope, b, now)
}

// shutLocked is shut, under the gate's lock.
func (g *memGate) shutLocked(scope string, b *bypass, now time.Time) {
	for {
		w := b.w.Load()
		if w&bypassShut != 0 {
			return
		}
		if b.w.CompareAndSwap(w, w|bypassShut) {
			if w > 0 {
				s := g.state(scope, now)
				s.inflight += w
				s.episodeInflight += w
			}
			return
		}
	}
}

// holdShut shuts scope's bypass b and holds the scope until until, at now,
// in one hold of the gate's lock: a reopen between the two would find the
// scope idle, and open the bypass under the hold.
func (g *memGate) holdShut(scope string, b *bypass, until, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shutLocked(scope, b, now)
	if until.After(now) {
		g.state(scope, now).hold(until, now)
	}
}

// place counts, in scope's gate state at now, a calm call's place adopted
// into its shut bypass (Transport.adoptLocked): as shut counts the places
// taken, a send in flight.
func (g *memGate) place(scope string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state(scope, now)
	s.inflight++
	s.episodeInflight++
}

// unsent gives back a place the gate counted as a send in flight as the
// bypass shut, whose call had no send out then: it was still to send (it
// then goes through the gate), or its send was answered already. What the
// gate set against a published quota for it is given back too: every place
// was counted before any quota the scope published since it shut.
func (g *memGate) unsent(scope string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state(scope, now)
	if s.inflight > 0 {
		s.inflight--
	}
	if s.episodeInflight > 0 {
		s.episodeInflight--
	}
	if s.inflightAtLowest > 0 {
		s.inflightAtLowest--
		if s.known {
			s.available++
		}
	}
}

// keeps reports whether the gate has state for scope at now: a hold, a
// quota, or a send in flight.
func (g *memGate) keeps(scope string, now time.Time) bool {
	if g.size.Load() == 0 {
		return false // a gate that keeps no scope at all, without the lock
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.scopes[scope]
	return s != nil && !s.idle(now)
}

// reopen opens scope's bypass b again when the gate keeps nothing for the
// scope at now and no send it admitted is still out: the sends in flight
// are then all the gate's, and none of them.
func (g *memGate) reopen(scope string, b *bypass, now time.Time) {
	if g.infer {
		return // the inferred quota counts every send
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.scopes[scope]; s != nil && !s.idle(now) {
		return
	}
	b.w.CompareAndSwap(bypassShut, 0)
}
