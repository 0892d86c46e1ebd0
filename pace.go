// The shared pace: how Transports that share a gate pace a scope as one
// sender, the gate keeping the limiter's state for all of them.

package heed

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"
)

// PaceGate is a Gate that also keeps, per scope, the opaque state heed
// paces a throttled scope by, so that every Transport sharing it, across a
// fleet too, paces the scope as one sender (docs/pacing.md). NewGate and
// redisgate return PaceGates. Implementations must be safe for concurrent
// use.
type PaceGate interface {
	Gate
	// Pace replaces the scope's state atomically with update's result (its
	// argument nil for none); update may run more than once, and depends
	// only on its argument. A state unchanged for 10 minutes may be
	// forgotten. On an error the Transport paces on its own copy.
	Pace(ctx context.Context, scope string, update func(state []byte) []byte) error
}

// sharedPace is a scope's pace kept in a PaceGate.
type sharedPace struct {
	gate  PaceGate
	scope string
}

// paceTimeout bounds a PaceGate call; a gate may bound it more.
const paceTimeout = time.Second

// sharing reports whether the limiter paces by the gate's pace: it has
// joined it, and the gate has not failed in the last paceRetry. Called
// with a.mu held.
func (a *adaptive) sharing() bool {
	return a.joined && (a.downUntil.IsZero() || !time.Now().Before(a.downUntil))
}

// paceRetry is how long a Transport whose gate failed a pace call paces on
// its own copy before it asks the gate again.
const paceRetry = time.Second

// join has the limiter pace by the gate's pace from now on, once: called
// at a throttle with a hint of a second or more of a herd, or at a hold
// found elsewhere, of length hint. The gate's pace, if it has one, replaces
// this Transport's; without one, this Transport's becomes the gate's. The
// sends this Transport had served are added to the first episode's, the
// burst the server took at once: those that went in the episode, or within
// hint before its refusal, while it lasts (until its first reopen), or,
// before the pace has started, those
// that went within hint before now, which whichever Transport starts it
// keeps if it starts within a hint. Sends waiting on this Transport's
// tokens take as many of the gate's. With paced, it joins only a pace the
// gate has started, and writes nothing otherwise; it then reports whether
// the gate answered with none started.
func (a *adaptive) join(now time.Time, hint time.Duration, paced bool) bool {
	if a.shared == nil || a.joined || (!a.downUntil.IsZero() && now.Before(a.downUntil)) {
		return false
	}
	own := a.paceState
	own.rel.served = slices.Clone(own.rel.served)
	waiting := math.Max(own.issued-own.granted, 0)
	var shift float64
	declined := false
	_, err := a.shared.update(func(old []byte) []byte {
		shift, declined = 0, false
		found := a.paceState.decode(old)
		if paced && (!found || !a.enabled) {
			declined = true // own is restored below
			return old
		}
		if !found {
			// No pace in the gate: this Transport's becomes it, tokens
			// and all.
			a.paceState = own
			a.rel.served = slices.Clone(own.rel.served)
			a.rel.epServed = 0 // this Transport's served, below
		} else {
			// The gate's numbering goes on; this Transport's waiting
			// sends take the next tokens in it.
			shift = a.issued - own.granted
			a.issued += waiting
		}
		switch {
		case !a.enabled:
			if a.rel.epStart.IsZero() || a.rel.epStart.Before(now.Add(-hint)) {
				a.rel.epStart, a.rel.epServed = now, 0
			}
			a.rel.epServed += a.servedIn(now.Add(-hint), now)
		case a.rel.firstEp:
			to := a.rel.epRefused
			if to.IsZero() {
				to = now
			}
			// From a hint before the refusal at least: the episode's
			// start is the refused Transport's, no earlier than its own
			// first send, and this one's may have gone before that.
			from := a.rel.epStart
			if h := to.Add(-hint); h.Before(from) {
				from = h
			}
			a.rel.epServed += a.servedIn(from, to)
		}
		return a.paceState.encode()
	})
	if declined || (err != nil && paced) {
		// Nothing to join, or no telling: this Transport paces alone as
		// it did, and a throttle of its own may join the pace later.
		a.paceState = own
		return declined && err == nil
	}
	if err != nil {
		// Not joined: this Transport paces alone, and asks again at its
		// next throttle or hold found elsewhere, a paceRetry on.
		a.paceState = own
		a.downUntil = time.Now().Add(paceRetry)
		return false
	}
	a.joined, a.downUntil = true, time.Time{}
	a.gen, a.shift = a.gen+1, shift
	// Every answer of a joined Transport is the gate's to count.
	a.active.Store(true)
	return false
}

// through runs f on the gate's pace, read afresh, and writes it back if
// write, when not nil, says so: due's refill, which the next change makes
// again, is not written. f may run more than once, and must set what it
// returns on every run. When the gate fails, f runs on this Transport's
// copy, the last it read, and so do the calls of the next paceRetry.
func (a *adaptive) through(f func(), write func() bool) {
	own := a.paceState
	own.rel.served = slices.Clone(own.rel.served)
	ran, err := a.shared.update(func(old []byte) []byte {
		if !a.paceState.decode(old) {
			a.paceState = own // forgotten, or not heed's: this copy goes on
			a.rel.served = slices.Clone(own.rel.served)
		}
		f()
		if a.enabled {
			a.active.Store(true)
		}
		if write != nil && !write() {
			return old
		}
		return a.paceState.encode()
	})
	a.outcome(ran, err, own)
	if !ran {
		f() // on this Transport's copy
	}
}

// outcome accounts for a pace call's outcome: a failed one has this copy
// pace for paceRetry.
func (a *adaptive) outcome(ran bool, err error, own paceState) {
	if err == nil {
		a.downUntil = time.Time{}
		return
	}
	if !ran {
		a.paceState = own
	}
	a.downUntil = time.Now().Add(paceRetry)
}

// update calls the gate, and reports whether update ran on what it read,
// and the gate's error: a change it did not store, or none.
func (s *sharedPace) update(update func([]byte) []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), paceTimeout)
	defer cancel()
	ran := false
	err := s.gate.Pace(ctx, s.scope, func(b []byte) []byte {
		ran = true
		return update(b)
	})
	return ran, err
}

// The encoding of a paceState: a version byte, a byte of flags, then
// fixed fields, little endian, then the release's served sends. Times are
// Unix nanoseconds, 0 for the zero time.
const (
	paceVersion = 7
	paceFloats  = 16
	paceTimes   = 12
	paceFixed   = 2 + 8*paceFloats + 8*paceTimes + 8 + 2 // and stepServed, and the served count
)

// errPaceState is a state that is not one this version of heed wrote.
var errPaceState = errors.New("heed: not a pace state")

// floats and times list p's numbers and times in their encoded order.
func (p *paceState) floats() [paceFloats]*float64 {
	r := &p.rel
	return [...]*float64{&p.fillRate, &p.capacity, &p.issued, &p.granted, &p.floor, &p.lastMax, &p.k, &p.cut, &r.burst, &r.fitRate, &r.drain, &r.drainEp, &r.let, &r.spentServed, &r.late, &r.lapsed}
}

func (p *paceState) times() [paceTimes]*time.Time {
	r := &p.rel
	return [...]*time.Time{&p.lastFill, &p.lastThrottle, &r.fitAt, &r.reopen, &r.epStart, &r.epRefused, &r.step, &r.spentAt, &r.epSpent, &r.refusedAt, &r.refused, &r.spread}
}

func (p *paceState) flags() [7]*bool {
	r := &p.rel
	return [...]*bool{&p.enabled, &p.long, &r.on, &r.fitted, &r.firstEp, &r.window, &r.quoted}
}

func (p *paceState) encode() []byte {
	r := &p.rel
	flags := byte(0)
	for i, b := range p.flags() {
		if *b {
			flags |= 1 << i
		}
	}
	out := make([]byte, 0, paceFixed+8+8*len(r.served))
	out = append(out, paceVersion, flags)
	for _, f := range p.floats() {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(*f))
	}
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(r.epServed))
	for _, t := range p.times() {
		out = binary.LittleEndian.AppendUint64(out, uint64(unixNano(*t)))
	}
	out = binary.LittleEndian.AppendUint64(out, uint64(int64(r.stepServed)))
	out = binary.LittleEndian.AppendUint16(out, uint16(len(r.served)))
	for _, t := range r.served {
		out = binary.LittleEndian.AppendUint64(out, uint64(unixNano(t)))
	}
	return out
}

// decode sets p from b and reports whether b is a pace state; a b that is
// not one, nil included, leaves p as it was.
func (p *paceState) decode(b []byte) bool {
	q, err := decodePace(b)
	if err != nil {
		return false
	}
	*p = q
	return true
}

// decodePace reads a state encode wrote, or returns errPaceState: every
// number must be finite, at least 0 and at most paceMaxNumber; a pace
// that is on must have a rate of at least adaptiveMinRate and room for a
// token; and the served sends are at most releaseKeep.
func decodePace(b []byte) (paceState, error) {
	var p paceState
	if len(b) < paceFixed+8 || b[0] != paceVersion || b[1]>>7 != 0 {
		return p, errPaceState
	}
	for i, f := range p.flags() {
		*f = b[1]&(1<<i) != 0
	}
	b = b[2:]
	next := func() uint64 {
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		return v
	}
	fs := p.floats()
	for _, f := range append(fs[:], &p.rel.epServed) {
		*f = math.Float64frombits(next())
		if math.IsNaN(*f) || *f < 0 || *f > paceMaxNumber {
			return paceState{}, errPaceState
		}
	}
	if p.enabled && (p.fillRate < adaptiveMinRate || p.capacity < 1) {
		return paceState{}, errPaceState
	}
	for _, t := range p.times() {
		n := int64(next())
		if n < 0 {
			return paceState{}, errPaceState
		}
		*t = fromUnixNano(n)
	}
	step := int64(next())
	if step < 0 || step > paceMaxNumber {
		return paceState{}, errPaceState
	}
	p.rel.stepServed = int(step)
	n := int(binary.LittleEndian.Uint16(b))
	b = b[2:]
	if n > releaseKeep || len(b) != 8*n {
		return paceState{}, errPaceState
	}
	if n > 0 {
		p.rel.served = make([]time.Time, n)
		for i := range p.rel.served {
			t := int64(next())
			if t < 0 {
				return paceState{}, errPaceState
			}
			p.rel.served[i] = fromUnixNano(t)
		}
	}
	return p, nil
}

// paceMaxNumber bounds every number of a decoded state: beyond it, the
// state is not heed's.
const paceMaxNumber = 1e15

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
