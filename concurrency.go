// The learned concurrency cap: when a scope's refusals follow the number of
// its sends in flight rather than time, as a concurrency limiter's do, heed
// caps the scope's sends in flight and queues the rest.

package heed

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// concurrency learns and keeps a scope's cap on sends in flight, from how
// many sends were in flight when each one left. A refusal without a hint
// that left with others in flight caps the scope at those others: the
// server may take no more. While capped, a refused send waits for a slot,
// not for a backoff. A refusal that left within the cap lowers it to what
// was in flight before it; one that left alone shows that refusals do not
// follow the number in flight, and the cap is dropped, not to be learned
// again for capForget. After 4·cap (at least capGrowAfter) sends served in
// a row at the cap, the cap grows by one, to find a capacity that grew.
type concurrency struct {
	on       atomic.Bool  // limit > 0, read without the lock
	watching atomic.Bool  // served sends are measured: a hint-less refusal came with others in flight
	count    atomic.Int64 // sends in flight, every one, capped or not

	mu sync.Mutex

	ruledOut time.Time // refusals did not follow the number in flight

	limit   int64 // the cap; 0: none
	atCap   int   // sends served in a row that left at the cap
	lagged  bool  // a refusal at the cap was let pass as the server's lag
	waiters []chan struct{}
	took    time.Duration // a capped send's time in flight, smoothed
}

// capForget is how long a scope whose refusals did not follow the number
// in flight is not capped again; capGrowAfter is the least number of sends
// served in a row at the cap before it grows by one (4·cap when more).
const (
	capForget    = time.Minute
	capGrowAfter = 16
)

// setLimit sets the cap; c.mu is held.
func (c *concurrency) setLimit(n int64) {
	c.limit = n
	c.on.Store(n > 0)
}

// sendTime returns a capped send's smoothed time in flight, at least a
// millisecond: heed's estimate of how soon a slot frees.
func (c *concurrency) sendTime() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.took, time.Millisecond)
}

// answered learns from a send that left with inflight sends in flight,
// itself included: served, or refused without a hint (refused). It reports
// whether the refusal is one the cap answers: the retry then waits for a
// slot rather than a backoff.
func (c *concurrency) answered(now time.Time, inflight int64, served, refused bool) bool {
	if !served && !refused {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit > 0 {
		switch {
		case served && inflight >= c.limit:
			c.lagged = false
			if c.atCap++; c.atCap >= max(capGrowAfter, 4*int(c.limit)) {
				c.setLimit(c.limit + 1)
				c.atCap = 0
				c.wake()
			}
		case refused && inflight <= 1:
			c.drop(now)
			return false
		case refused && inflight == c.limit && !c.lagged:
			// Once, at the cap itself: the server may not yet have counted
			// out a send whose answer this one followed.
			c.lagged = true
		case refused && inflight <= c.limit:
			c.setLimit(inflight - 1)
			c.atCap = 0
			c.lagged = false
		}
		return refused
	}
	if !refused || inflight <= 1 || (!c.ruledOut.IsZero() && now.Sub(c.ruledOut) < capForget) {
		// A lone refusal says nothing of the number in flight.
		return false
	}
	// A refusal that left with others in flight: the server may take no
	// more than those. Cap there; refusals within the cap will tell if it
	// was time, not the number in flight, that decided.
	c.watching.Store(true)
	c.setLimit(inflight - 1)
	c.atCap = 0
	return true
}

// drop ends the cap, letting every waiter go.
func (c *concurrency) drop(now time.Time) {
	c.setLimit(0)
	c.ruledOut = now
	c.atCap = 0
	c.wake()
}

// wake lets waiters go while the cap allows; with no cap, all. c.mu is
// held.
func (c *concurrency) wake() {
	for len(c.waiters) > 0 && (c.limit == 0 || c.count.Load() < c.limit) {
		ch := c.waiters[0]
		c.waiters = c.waiters[1:]
		c.count.Add(1)
		close(ch)
	}
}

// take counts a send going out of a scope with no cap.
func (c *concurrency) take() { c.count.Add(1) }

// acquire counts a send going out under the cap, waiting at most d (0: no
// bound) for the number in flight to fall below it. It reports whether the
// send may go, or returns the context's error.
func (c *concurrency) acquire(ctx context.Context, d time.Duration) (bool, error) {
	c.mu.Lock()
	if c.limit == 0 || (c.count.Load() < c.limit && len(c.waiters) == 0) {
		c.count.Add(1)
		c.mu.Unlock()
		return true, nil
	}
	ch := make(chan struct{})
	c.waiters = append(c.waiters, ch)
	c.mu.Unlock()
	var expire <-chan time.Time
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		expire = timer.C
	}
	var err error
	select {
	case <-ch:
		return true, nil
	case <-expire:
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-ch: // let go meanwhile: give the place back
		c.count.Add(-1)
		c.wake()
	default:
		for i, w := range c.waiters {
			if w == ch {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				break
			}
		}
	}
	return false, err
}

// release uncounts a send that went at since; under a cap it measures the
// send's time and lets a waiter go.
func (c *concurrency) release(since time.Time) {
	c.count.Add(-1)
	if !c.on.Load() {
		return
	}
	took := time.Since(since)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.took == 0 {
		c.took = took
	} else {
		c.took = (c.took*7 + took) / 8
	}
	c.wake()
}

// passCap takes a slot under the scope's learned cap for the send the gate
// let through at now, waiting as long as the time left allows, or returns
// a *DeferredError, with nothing sent, when none frees in that time. It
// returns when the send may go.
func (rt *roundTrip) passCap(attempt int, now time.Time) (time.Time, error) {
	p := rt.p
	bound := p.maxWait
	if rt.deadline.Bound {
		bound = min(bound, max(rt.deadline.End.Sub(now)-max(p.reserve, rt.took), time.Nanosecond))
	}
	if n := rt.local.waiting.Add(1); n > int64(p.maxWaiting) {
		rt.local.waiting.Add(-1)
		d := rt.waitDecision(attempt, now, rt.local.cap.sendTime(), reasonQueueFull, "concurrency")
		return now, rt.deferred(&d, attempt-1)
	}
	ok, err := rt.local.cap.acquire(rt.ctx, bound)
	rt.local.waiting.Add(-1)
	if err != nil {
		return now, err
	}
	now = time.Now()
	if !ok {
		d := rt.waitDecision(attempt, now, rt.local.cap.sendTime(), reasonConcurrency, "concurrency")
		return now, rt.deferred(&d, attempt-1)
	}
	rt.capAt = now
	return now, nil
}

// releaseCap uncounts the current send from its scope's sends in flight,
// if it was counted.
func (rt *roundTrip) releaseCap() {
	if !rt.capAt.IsZero() {
		rt.local.cap.release(rt.capAt)
		rt.capAt = time.Time{}
	}
}
