// Admission: what a send waits for before it goes, the scope's gate and
// its spread, and what the gate is told once the send is answered or
// throttled.

package heed

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/heed-go/heed/internal/rules"
)

// passGate waits while the scope is cooling down, or returns a
// *DeferredError when that wait does not fit. With a QuotaGate it also
// takes one of the scope's published sends. A gate error fails open. It
// returns the time it let the attempt through; now is the time it was
// called, if the caller has it.
func (c *call) passGate(attempt int, now time.Time) (time.Time, error) {
	p := c.policy
	paced := false    // passed the pace, or skipped it for the learned cap (run)
	reserved := false // holds a pacing token, or none for a pace that was off
	// stale: the call waited since it was last admitted or began (a
	// retry waited out its backoff), so the fleet's names are merged for
	// its shape if it is not seen (fleetnames.go)
	stale := attempt > 1
	for {
		if now.IsZero() {
			now = time.Now()
		}
		if !paced {
			paced = true
			c.token = token{}
			// Under a learned cap, a send takes its pacing token once it
			// has a slot (run), so that a token does not age in the
			// cap's line while the pace is cut.
			if reserved = !c.local.limiter.ceil.on.Load(); reserved {
				waited, err := c.pace(attempt, now)
				if err != nil {
					return now, err
				}
				if waited {
					now = time.Now()
					stale = true
				}
			}
		}
		// A send in a named limit waits for its request scope's hold
		// too (named.go); a limit learned during any wait holds it.
		c.lookName(true, stale)
		if c.calm != 0 && (c.named != "" || c.calmAdopted()) {
			// A limit the server named, or another call of the scope
			// registered it: the call is admitted there (calm.go).
			c.join(joinUnsent)
			if paced {
				// calmScope's limiter gave no token: the call is paced
				// in the scope it joined.
				paced = false
				continue
			}
		}
		nb := c.scopeHold(now)
		scopeHeld := !nb.IsZero()
		if !scopeHeld {
			var err error
			c.takenIn, c.takenAs = c.gateScope(), c.namedAs
			if c.fast && (c.takenIn != c.scope || c.local.bypass.shut()) && c.slow() {
				c.transport.own.unsent(c.scope, now) // its place, counted as a send before it sent
			}
			if c.fast || c.transport.own != nil && c.takenIn == c.scope && c.local.bypass.enter() {
				c.taken, c.bypassed = true, true
				return now, nil
			}
			nb, now, c.episode, err = c.transport.admit.take(c.ctx, c.takenIn, now)
			if err != nil {
				c.taken = false
				c.decide(zapcore.WarnLevel, &decision{kind: EventGateError, route: p.name, method: c.req.Method, url: c.req.URL, attempt: attempt, err: err})
				return now, nil
			}
			if nb.IsZero() {
				c.taken = true
				return now, nil
			}
		}
		// Not admitted: wait for the gate to open (waitForGate); a pacing
		// token held goes back.
		if err := c.waitForGate(attempt, now, nb, scopeHeld, reserved); err != nil {
			return now, err
		}
		paced, reserved = false, false
		now, stale = time.Time{}, true
	}
}

// waitForGate waits, before attempt is sent, for a gate that did not admit
// it at now and answered nb (the scope's hold, when scopeHeld), then a
// spread, so that the scope's waiters do not all fire at the same instant;
// or returns a *DeferredError when that wait does not fit, or the
// context's error if it ends first. paced: the call holds a pacing token,
// which goes back. Apart from passGate, whose success path it keeps short.
func (c *call) waitForGate(attempt int, now, nb time.Time, scopeHeld, paced bool) error {
	p := c.policy
	base := max(nb.Sub(now), time.Millisecond)
	level := zapcore.InfoLevel
	recheck := false
	if base <= rules.QuotaRecheck {
		// Perhaps a recheck while answers that may give sends back are
		// pending (rules.QuotaRecheck), or while redisgate's first
		// contact has its sends in flight. Whether to defer is decided
		// against the reset all the same, which NotBefore answers: a
		// caller whose time cannot cover it defers at once, as the
		// contract says, rather than spend its time on sends that may
		// not come back. One whose time can asks again at each
		// recheck, logged at debug level. A QuotaGate of another kind
		// (redisgate) that answers no hold and no reset asked for a
		// recheck, not a hold: no throttle is told. heed's own gate and
		// a plain Gate's NotBefore may not know the hold or the inferred
		// window that refused, so theirs are holds. The cost is a
		// NotBefore call per short refusal; a failing gate answers no
		// reset.
		reset := c.transport.admit.reset(c.ctx, c.gateScope())
		switch full := reset.Sub(now); {
		case full > base:
			if c.deadline.Fits(now, full, full, p.maxWait, max(p.reserve, c.took)) {
				level = zapcore.DebugLevel
			} else {
				base = full // defers below
			}
		case full <= 0 && !scopeHeld && c.transport.admit.rechecks():
			recheck = true
			level = zapcore.DebugLevel
		}
	}
	if !recheck && (c.named == "" || scopeHeld) {
		c.heldElsewhere(now, nb) // a named limit's hold paces nothing
	}
	spread := p.jitter
	if spread == 0 {
		spread = min(base/50, maxGateSpread)
	}
	wait := base + rules.RandUpTo(spread)
	if paced {
		// The token goes back for a send that can use it now; this one
		// takes another after its wait.
		c.local.limiter.cancel(c.token)
		c.token = token{}
	}
	if recheck {
		c.local.limiter.queue(now, 1)
	}
	err := c.waitToSend(attempt, now, base, wait, reasonCoolingDown, "gate", level)
	if recheck {
		c.local.limiter.queue(now, -1)
	}
	return err
}

// pace waits for the scope's pacing token before attempt is sent, or
// returns a *DeferredError, with nothing more sent, when the wait for it
// does not fit; or the context's error if it ends first. It reports
// whether it waited.
func (c *call) pace(attempt int, now time.Time) (bool, error) {
	l := &c.local.limiter
	k, wait := l.reserve(now)
	c.token = k
	if wait == 0 {
		return false, nil
	}
	p := c.policy
	d := c.waitDecision(attempt, now, wait, reasonPacing, "pacing")
	if !c.deadline.Fits(now, wait, wait, p.maxWait, max(p.reserve, c.took)) {
		l.cancel(k)
		return true, c.deferred(&d, attempt-1)
	}
	if err := c.joinLine(&d, attempt, zapcore.DebugLevel); err != nil {
		l.cancel(k)
		return true, err
	}
	defer c.local.waiting.Add(-1)
	for wait > 0 {
		if err := rules.Sleep(c.ctx, l.recheck(wait)); err != nil {
			l.cancel(k)
			return true, err
		}
		now = time.Now()
		if wait = l.due(&k, now); wait > 0 && !c.deadline.Fits(now, wait, wait, p.maxWait, max(p.reserve, c.took)) {
			l.cancel(k)
			d = c.waitDecision(attempt, now, wait, reasonPacing, "pacing")
			return true, c.deferred(&d, attempt-1)
		}
	}
	c.token = k
	return true, nil
}

// waitToSend sleeps wait (base before any spread) before attempt is sent,
// logged at level, or returns a *DeferredError, with nothing more sent, when
// that wait does not fit; or the context's error if it ends first.
func (c *call) waitToSend(attempt int, now time.Time, base, wait time.Duration, reason, source string, level zapcore.Level) error {
	p := c.policy
	d := c.waitDecision(attempt, now, wait, reason, source)
	if !c.deadline.Fits(now, base, wait, p.maxWait, max(p.reserve, c.took)) {
		return c.deferred(&d, attempt-1)
	}
	if err := c.joinLine(&d, attempt, level); err != nil {
		return err
	}
	defer c.local.waiting.Add(-1)
	return rules.Sleep(c.ctx, wait)
}

// joinLine puts attempt in its scope's waiting line and logs the wait d at
// level, or returns a *DeferredError, with nothing more sent, when the line
// is full: the scope's waiting line is bounded by Policy.MaxWaiting. The
// caller leaves the line (waiting.Add(-1)) when its wait ends.
func (c *call) joinLine(d *decision, attempt int, level zapcore.Level) error {
	if n := c.local.waiting.Add(1); n > int64(c.policy.maxWaiting) {
		c.local.waiting.Add(-1)
		d.verdict.Reason = reasonQueueFull
		return c.deferred(d, attempt-1)
	}
	d.kind = EventGateWait
	c.decide(level, d)
	return nil
}

// waitDecision describes a wait of attempt before it is sent, decided at
// now.
func (c *call) waitDecision(attempt int, now time.Time, wait time.Duration, reason, source string) decision {
	return decision{
		route: c.policy.name, method: c.req.Method, url: c.req.URL, attempt: attempt,
		status: c.status, verdict: Verdict{Class: Throttled, Reason: reason},
		wait: wait, source: source, retryAt: wallAt(now.Add(wait)), left: c.deadline.Left(now),
	}
}

// maxGateSpread bounds the default spread of a scope's waiters after its
// gate opens: 1/50 of the wait, at most this.
const maxGateSpread = 20 * time.Millisecond

// done tells a QuotaGate that the send it admitted was answered, with the
// quota the response published (m are its header's marks), and whether it
// was served (answered, not throttled). A response served by a cache (one
// with an Age header) publishes nothing, quota or room, as the RateLimit
// fields draft says.
//
// now is the time the send went, which serves when the response publishes
// nothing; the clock is read when it does.
func (c *call) done(resp *http.Response, m marks, now time.Time, served, last bool) {
	c.room = -1
	if resp != nil && m&(markRoom|markAge) == markRoom {
		if r, ok := bucketRoom(resp.Header); ok {
			c.room = r // a published quota's, if any, reads over it
		}
	}
	if !c.taken {
		return
	}
	c.taken = false
	quoted := resp != nil && m&(markQuota|markAge) == markQuota
	own := c.transport.own
	if own != nil && quoted && c.takenIn == c.scope {
		own.shut(c.scope, &c.local.bypass, now) // the quota is the gate's to keep
	}
	if c.bypassed {
		c.bypassed = false
		if c.fast {
			if last && !quoted && !c.transport.heard && !c.local.bypass.shut() {
				// The call's place is left as it ends (leaveScope), a
				// moment from now: the gate counts it from here only if
				// the bypass shuts meanwhile, as a place with no send out.
				// A call whose observer or logger is still to hear of the
				// answer gives it back now, lest a quota published
				// meanwhile count it while the observer runs.
				return
			}
			if !c.slow() {
				return // the gate has nothing of the scope, nor of this send
			}
		} else if c.local.bypass.leave() {
			return // the gate has nothing of the scope, nor of this send
		}
	}
	var q *Quota
	if quoted {
		now = time.Now()
		if wait, _, spent := spentDimension(resp.Header, now); spent {
			// A spent dimension (dimensions.go) is a hold until its reset,
			// not a quota: a gate keeps a quota's earliest reset, and the
			// requests' may come well before the tokens'.
			c.hold(now, wait)
		}
		answered := c.scope
		if c.holdIn != "" {
			answered = c.holdIn
		}
		if r, reset, _, ok := quota(resp.Header, now); ok && answered != c.takenIn {
			// Another scope's quota (named.go): spent, it holds that
			// scope until its reset; else the sends admitted there count it.
			if r == 0 {
				c.hold(now, reset)
			}
		} else if ok {
			c.room = r
			q = &Quota{Remaining: r, Reset: now.Add(min(reset, c.transport.maxHold))}
			if c.takenIn != c.scope && r == 0 {
				c.held(c.takenAs, q.Reset) // a named limit spent: its names are kept till then
			}
			if !c.local.published.Load() {
				c.local.published.Store(true)
			}
			c.local.stated(now)
			if until := mono(q.Reset); until > c.local.quotaUntil.Load() {
				c.local.quotaUntil.Store(until)
			}
		}
	}
	if err := c.transport.admit.done(c.ctx, c.takenIn, q, served, c.episode, now); err != nil {
		c.decide(zapcore.WarnLevel, &decision{kind: EventGateError, route: c.policy.name, method: c.req.Method, url: c.req.URL, err: err})
	}
	if own != nil && c.takenIn == c.scope && c.local.bypass.shut() {
		own.reopen(c.scope, &c.local.bypass, now)
	}
}

// heldElsewhere tells the limiter of a hold until nb that the gate gave
// at now and this Transport did not set: a throttle elsewhere of a scope
// that publishes no quota (a spent quota's reset is the gate's to keep,
// not a throttle). Of the sends that find the same hold, one tells it; the
// wire check then covers the hold too.
func (c *call) heldElsewhere(now, nb time.Time) {
	if c.local.published.Load() {
		return
	}
	// The gate may round a hold up to its own precision: a millisecond,
	// in redisgate.
	if !c.local.heldUntil.raise(nb, time.Millisecond) {
		return
	}
	c.local.throttledAt.Store(mono(now))
	c.local.stated(now)
	c.local.limiter.heldElsewhere(now, nb.Sub(now), c.local.waiting.Load() > 0)
}

// hold extends the scope's gate to hint after now, at most the Transport's
// MaxHold; a gate error is logged and ignored.
func (c *call) hold(now time.Time, hint time.Duration) {
	until := now.Add(min(hint, c.transport.maxHold))
	if c.holdIn != "" {
		// A limit the server named (named.go): its hold is the gate's;
		// the request scope's own state is not held by it, but is kept,
		// and its sends are checked at the wire for a while.
		c.local.throttledAt.Store(mono(now))
		c.local.stated(now)
		c.held(c.holdAs, until)
		if err := c.transport.gate.Hold(c.ctx, c.holdIn, until); err != nil {
			c.decide(zapcore.WarnLevel, &decision{kind: EventGateError, route: c.policy.name, method: c.req.Method, url: c.req.URL, err: err})
		}
		return
	}
	c.local.heldUntil.raise(until, 0)
	c.local.throttledAt.Store(mono(now))
	c.local.stated(now)
	if c.transport.own != nil {
		c.transport.own.holdShut(c.scope, &c.local.bypass, until, now)
		return
	}
	if err := c.transport.gate.Hold(c.ctx, c.scope, until); err != nil {
		c.decide(zapcore.WarnLevel, &decision{kind: EventGateError, route: c.policy.name, method: c.req.Method, url: c.req.URL, err: err})
	}
}

// slots is a cap on sends in flight that sends wait in line for: a Limit's
// InFlight (known.go) or the learned cap (concurrency.go).
type slots interface {
	// expected is how long a send asking for a slot now may wait; 0 when
	// one is free.
	expected() time.Duration
	// acquire takes a slot, waiting at most d for one; it reports whether
	// it got one, or returns the context's error.
	acquire(ctx context.Context, d time.Duration) (bool, error)
}

// waitForSlot waits for a slot of line before attempt is sent, as long as
// the time left allows, or returns a *DeferredError, with nothing sent, when
// the expected wait (heed's estimate) does not fit, or no slot came in time.
// source names the cap in the logs.
func (c *call) waitForSlot(attempt int, now time.Time, line slots, source string) (time.Time, error) {
	p := c.policy
	reserve := max(p.reserve, c.took)
	if exp := line.expected(); exp > 0 {
		d := c.waitDecision(attempt, now, exp, reasonConcurrency, source)
		if !c.deadline.Fits(now, exp, exp, p.maxWait, reserve) {
			return now, c.deferred(&d, attempt-1)
		}
		if err := c.joinLine(&d, attempt, zapcore.DebugLevel); err != nil {
			return now, err
		}
		defer c.local.waiting.Add(-1)
	}
	bound := p.maxWait
	if c.deadline.Bound {
		bound = min(bound, max(c.deadline.End.Sub(now)-reserve, time.Nanosecond))
	}
	got, err := line.acquire(c.ctx, bound)
	if err != nil {
		return now, err
	}
	now = time.Now()
	if !got {
		exp := max(line.expected(), time.Millisecond)
		d := c.waitDecision(attempt, now, exp, reasonConcurrency, source)
		return now, c.deferred(&d, attempt-1)
	}
	return now, nil
}
