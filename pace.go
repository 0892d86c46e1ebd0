// The shared pace: how Transports that share a gate pace a scope as one
// sender, the gate keeping the limiter's state for all of them.

package heed

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// PaceGate is a Gate that also keeps, per scope, the state heed paces the
// scope by once a hint of a second or more has throttled it (the release,
// docs/pacing.md), so that every Transport sharing the gate, in one
// process or across a fleet, paces the scope as one sender: one burst at
// each reopen, one rate fitted from the whole fleet's sends. A Transport
// given a PaceGate with WithGate joins the scope's shared pace when it is
// first throttled so, or finds a hold it did not set; until then, and for
// every scope that never is, it paces alone, without asking the gate.
// NewGate and redisgate both return PaceGates.
//
// The state is heed's own, opaque to the gate. Implementations must be
// safe for concurrent use.
type PaceGate interface {
	Gate
	// Pace replaces the scope's state, atomically, with what update
	// returns for it: nil when the gate has none, or it has expired.
	// update may be called more than once, when the state changed under
	// it, and must then depend only on its argument; if it returns its
	// argument unchanged, nothing need be written. A state unchanged for
	// PaceKeep may be forgotten. An error means the state may not have
	// been read or written; the Transport then paces on its own copy.
	Pace(ctx context.Context, scope string, update func(state []byte) []byte) error
}

// PaceKeep is how long a PaceGate keeps a scope's pace without a change.
const PaceKeep = 10 * time.Minute

// sharedPace is a scope's pace kept in a PaceGate.
type sharedPace struct {
	gate  PaceGate
	scope string
}

// paceTimeout bounds a PaceGate call; a gate may bound it more.
const paceTimeout = time.Second

// sharing reports whether the limiter paces by the gate's pace: it has
// joined it. Called with a.mu held.
func (a *adaptive) sharing() bool { return a.joined }

// join has the limiter pace by the gate's pace from now on, once. The
// gate's pace, if it has one, replaces this Transport's; without one,
// this Transport's becomes the gate's. The sends this Transport had served
// are added to the first episode's, the burst the server took at once,
// while that episode lasts: before the pace starts, or before its first
// reopen.
func (a *adaptive) join() {
	if a.shared == nil || a.joined {
		return
	}
	a.joined = true
	own := a.paceState
	served := float64(a.sends - a.inflight.Load() - a.throttles)
	ok := a.shared.update(func(old []byte) []byte {
		if !a.paceState.decode(old) {
			a.paceState = own
			a.rel.epServed = 0 // this Transport's served, below
		}
		if !a.enabled || a.rel.epStart.Equal(a.first) {
			// The first episode: not yet paced, or not yet reopened.
			a.rel.epServed += served
			if !own.first.IsZero() && (a.first.IsZero() || own.first.Before(a.first)) {
				if a.enabled {
					a.rel.epStart = own.first
				}
				a.first = own.first
			}
		}
		return a.paceState.encode()
	})
	// Every answer of a joined Transport is the gate's to count, even
	// before the pace starts: the first episode's served sends.
	a.active.Store(true)
	a.paceDown = !ok
	if !ok {
		a.paceState = own
		if !a.enabled {
			a.rel.epServed = served // as if it had joined
		}
	}
}

// through runs f on the gate's pace, read afresh, and writes it back if
// write: due's refill, which the next change makes again, is not written.
// f may run more than once, and must set what it returns on every run.
// When the gate fails, f runs on this Transport's copy, the last it read.
func (a *adaptive) through(f func(), write bool) {
	own := a.paceState
	ok := a.shared.update(func(old []byte) []byte {
		if !a.paceState.decode(old) {
			a.paceState = own // forgotten, or not heed's: this copy goes on
		}
		f()
		if a.enabled {
			a.active.Store(true)
		}
		if !write {
			return old
		}
		return a.paceState.encode()
	})
	a.paceDown = !ok
	if !ok {
		a.paceState = own
		f()
	}
}

// update calls the gate, and reports whether update ran on what it read.
func (s *sharedPace) update(update func([]byte) []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), paceTimeout)
	defer cancel()
	ran := false
	err := s.gate.Pace(ctx, s.scope, func(b []byte) []byte {
		ran = true
		return update(b)
	})
	return err == nil || ran
}

// The encoding of a paceState: a version byte, then fixed fields, little
// endian, then the release's served sends. Times are Unix nanoseconds, 0
// for the zero time.
const (
	paceVersion = 1
	paceFixed   = 1 + 1 + 20*8 + 2 // version, flags, 20 numbers, served count
)

// errPaceState is a state that is not one this version of heed wrote.
var errPaceState = errors.New("heed: not a pace state")

func (p *paceState) encode() []byte {
	r := &p.rel
	flags := byte(0)
	for i, b := range []bool{p.enabled, p.warm, p.long, r.on, r.fitted} {
		if b {
			flags |= 1 << i
		}
	}
	out := make([]byte, 0, paceFixed+8*len(r.served))
	out = append(out, paceVersion, flags)
	for _, f := range []float64{p.fillRate, p.capacity, p.issued, p.granted, p.count, p.measured, p.floor, p.lastMax, p.k, r.burst, r.fitRate, r.epServed} {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f))
	}
	for _, t := range []time.Time{p.lastFill, p.first, p.lastThrottle, r.fitAt, r.reopen, r.epStart, r.epRefused, r.step} {
		out = binary.LittleEndian.AppendUint64(out, uint64(unixNano(t)))
	}
	out = binary.LittleEndian.AppendUint16(out, uint16(len(r.served)))
	for _, t := range r.served {
		out = binary.LittleEndian.AppendUint64(out, uint64(unixNano(t)))
	}
	// bucket and stepServed last, as whole numbers.
	out = binary.LittleEndian.AppendUint64(out, uint64(p.bucket))
	out = binary.LittleEndian.AppendUint64(out, uint64(int64(r.stepServed)))
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
// number must be finite and in its range, and the served sends at most
// releaseKeep.
func decodePace(b []byte) (paceState, error) {
	var p paceState
	if len(b) < paceFixed+16 || b[0] != paceVersion || b[1]>>5 != 0 {
		return p, errPaceState
	}
	flags := b[1]
	p.enabled, p.warm, p.long = flags&1 != 0, flags&2 != 0, flags&4 != 0
	r := &p.rel
	r.on, r.fitted = flags&8 != 0, flags&16 != 0
	b = b[2:]
	next := func() uint64 {
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		return v
	}
	for _, f := range []*float64{&p.fillRate, &p.capacity, &p.issued, &p.granted, &p.count, &p.measured, &p.floor, &p.lastMax, &p.k, &r.burst, &r.fitRate, &r.epServed} {
		*f = math.Float64frombits(next())
		if math.IsNaN(*f) || math.IsInf(*f, 0) || math.Abs(*f) > paceMaxNumber {
			return paceState{}, errPaceState
		}
	}
	if p.fillRate < 0 || p.capacity < 0 || p.count < 0 || p.measured < 0 || r.burst < 0 || r.epServed < 0 {
		return paceState{}, errPaceState
	}
	for _, t := range []*time.Time{&p.lastFill, &p.first, &p.lastThrottle, &r.fitAt, &r.reopen, &r.epStart, &r.epRefused, &r.step} {
		*t = fromUnixNano(int64(next()))
	}
	n := int(binary.LittleEndian.Uint16(b))
	b = b[2:]
	if n > releaseKeep || len(b) != 8*n+16 {
		return paceState{}, errPaceState
	}
	if n > 0 {
		r.served = make([]time.Time, n)
		for i := range r.served {
			r.served[i] = fromUnixNano(int64(next()))
		}
	}
	p.bucket = int64(next())
	step := int64(next())
	if step < 0 || step > paceMaxNumber {
		return paceState{}, errPaceState
	}
	r.stepServed = int(step)
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
