// The admission: the one way a Transport's sends pass its gate, whatever
// kind of gate it was given.

package heed

import (
	"context"
	"time"
)

// admission admits a Transport's sends through its gate, and tells the gate
// of their answers. New picks one for the gate it was given: heed's own
// (ownAdmission), any other QuotaGate (quotaAdmission), or a plain Gate,
// beside which heed's own counts the quotas (plainAdmission).
type admission interface {
	// take admits one send of scope at now, returning the zero time and
	// the episode it was admitted in, or returns the time to ask again;
	// at is the time it answered. An error fails open.
	take(ctx context.Context, scope string, now time.Time) (nb, at time.Time, episode int64, err error)
	// reset is the time the scope's spent quota waits for, or its hold
	// (Gate.NotBefore); the zero time when not known.
	reset(ctx context.Context, scope string) time.Time
	// hold is the end of the scope's hold in the gate, any Transport's or
	// process's: heed's own gate's hold alone, else Gate.NotBefore, which
	// a QuotaGate may answer with a spent quota's reset. The zero time
	// when none; an error reads as none. remote reports whether asking
	// takes a round trip (any gate but heed's own).
	hold(ctx context.Context, scope string) (until time.Time, remote bool)
	// done records the answer to a send admitted in episode, at now, with
	// the quota its response published (nil: none), and whether it was
	// served.
	done(ctx context.Context, scope string, q *Quota, served bool, episode int64, now time.Time) error
	// rechecks reports whether a short refusal whose gate then answers no
	// hold and no reset asked for a recheck (redisgate's first contact):
	// a QuotaGate of another kind's. heed's own gate refuses so only for
	// a window it inferred, and a plain Gate's hold is not in the reset
	// its admission answers.
	rechecks() bool
}

// newAdmission returns the admission for gate.
func newAdmission(gate Gate) admission {
	switch g := gate.(type) {
	case *memGate:
		return ownAdmission{g}
	case QuotaGate:
		return quotaAdmission{g}
	}
	// A plain Gate shares cooldowns; published quotas are then counted
	// in process.
	return plainAdmission{gate: gate, mem: NewGate().(*memGate)}
}

// ownAdmission is heed's own gate, called with the time: no clock read of
// its own, no error.
type ownAdmission struct{ g *memGate }

func (a ownAdmission) take(_ context.Context, scope string, now time.Time) (time.Time, time.Time, int64, error) {
	nb, episode := a.g.take(scope, now)
	return nb, now, episode, nil
}

func (a ownAdmission) reset(ctx context.Context, scope string) time.Time {
	nb, _ := a.g.NotBefore(ctx, scope)
	return nb
}

func (a ownAdmission) hold(_ context.Context, scope string) (time.Time, bool) {
	return a.g.holdEnd(scope), false
}

func (ownAdmission) rechecks() bool { return false }

func (a ownAdmission) done(_ context.Context, scope string, q *Quota, served bool, episode int64, now time.Time) error {
	a.g.done(scope, q, served, episode, now)
	return nil
}

// quotaAdmission is a QuotaGate of another kind, redisgate's: it counts
// the quotas, and knows nothing of episodes.
type quotaAdmission struct{ g QuotaGate }

func (a quotaAdmission) take(ctx context.Context, scope string, _ time.Time) (time.Time, time.Time, int64, error) {
	nb, err := a.g.Take(ctx, scope)
	return nb, time.Now(), 0, err
}

func (a quotaAdmission) reset(ctx context.Context, scope string) time.Time {
	nb, _ := a.g.NotBefore(ctx, scope)
	return nb
}

func (a quotaAdmission) hold(ctx context.Context, scope string) (time.Time, bool) {
	nb, _ := a.g.NotBefore(ctx, scope)
	return nb, true
}

func (quotaAdmission) rechecks() bool { return true }

func (a quotaAdmission) done(ctx context.Context, scope string, q *Quota, served bool, _ int64, _ time.Time) error {
	return a.g.Done(ctx, scope, q, served)
}

// plainAdmission is a plain Gate, which holds, with heed's own gate beside
// it counting published quotas in process.
type plainAdmission struct {
	gate Gate
	mem  *memGate
}

func (a plainAdmission) take(ctx context.Context, scope string, _ time.Time) (time.Time, time.Time, int64, error) {
	nb, err := a.gate.NotBefore(ctx, scope)
	now := time.Now()
	if err != nil || nb.After(now) {
		return nb, now, 0, err
	}
	nb, episode := a.mem.take(scope, now)
	return nb, now, episode, nil
}

func (a plainAdmission) reset(ctx context.Context, scope string) time.Time {
	nb, _ := a.mem.NotBefore(ctx, scope)
	return nb
}

func (a plainAdmission) hold(ctx context.Context, scope string) (time.Time, bool) {
	nb, _ := a.gate.NotBefore(ctx, scope)
	return nb, true
}

func (plainAdmission) rechecks() bool { return false }

func (a plainAdmission) done(_ context.Context, scope string, q *Quota, served bool, episode int64, now time.Time) error {
	a.mem.done(scope, q, served, episode, now)
	return nil
}
