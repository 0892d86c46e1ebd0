// Known limits: what the caller knows of a server's limit, which heed keeps
// to beside whatever the server says.

package heed

import (
	"context"
	"math"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
)

// Limit is what the caller knows of a server's limit that it may not
// signal: the sends of one policy in one scope go at most Rate a second,
// in bursts of at most Burst, with at most InFlight unanswered. heed keeps
// to it and still obeys every slower hold, quota and pace.
type Limit struct {
	Rate     float64 // sends a second; 0: no known rate
	Burst    int     // sends at once when the rate allows; below 1: 1
	InFlight int     // sends unanswered at once, until the body is closed; 0: no cap
}

// known keeps a Limit for the sends of one policy in one scope.
type known struct {
	mu sync.Mutex
	// the rate, as a generic cell rate algorithm: a send may go at
	// tat - tolerance, and moves tat on by interval
	interval  time.Duration
	tolerance time.Duration
	tat       time.Time

	// the cap on sends in flight
	slots   chan struct{} // one element per send in flight; nil: no cap
	waiting int           // sends waiting for a slot
	took    time.Duration // a send's time in flight, smoothed
}

func newKnown(l Limit) *known {
	k := &known{}
	if l.Rate > 0 && !math.IsInf(l.Rate, 0) && !math.IsNaN(l.Rate) {
		k.interval = max(time.Duration(float64(time.Second)/l.Rate), 1)
		k.tolerance = time.Duration(max(l.Burst, 1)-1) * k.interval
	}
	if l.InFlight > 0 {
		k.slots = make(chan struct{}, l.InFlight)
	}
	return k
}

// reserve returns how long a send at now must wait for the rate, and takes
// its place when fits says that wait fits; else it takes nothing.
func (k *known) reserve(now time.Time, fits func(time.Duration) bool) (time.Duration, bool) {
	if k.interval == 0 {
		return 0, true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	tat := k.tat
	if tat.Before(now) {
		tat = now
	}
	wait := max(tat.Add(-k.tolerance).Sub(now), 0)
	if wait > 0 && !fits(wait) {
		return wait, false
	}
	k.tat = tat.Add(k.interval)
	return wait, true
}

// expected returns how long a send that asks for a slot now may wait for
// one: the sends waiting ahead of it, by groups of the cap, times a send's
// smoothed time in flight; 0 when a slot is free.
func (k *known) expected() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.slots) < cap(k.slots) && k.waiting == 0 {
		return 0
	}
	rounds := k.waiting/cap(k.slots) + 1
	return time.Duration(rounds) * max(k.took, time.Millisecond)
}

// acquire takes a slot, waiting at most d for one; it reports whether it
// got one, or returns the context's error.
func (k *known) acquire(ctx context.Context, d time.Duration) (bool, error) {
	select {
	case k.slots <- struct{}{}:
		return true, nil
	default:
	}
	k.mu.Lock()
	k.waiting++
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.waiting--
		k.mu.Unlock()
	}()
	var expire <-chan time.Time
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		expire = timer.C
	}
	select {
	case k.slots <- struct{}{}:
		return true, nil
	case <-expire:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// release gives back a slot taken at since, measuring the send's time.
func (k *known) release(since time.Time) {
	took := time.Since(since)
	k.mu.Lock()
	if k.took == 0 {
		k.took = took
	} else {
		k.took = (k.took*7 + took) / 8
	}
	k.mu.Unlock()
	<-k.slots
}

// holdSlot makes resp's body give back the send's slot when it is closed,
// or gives it back at once when there is no body to close.
func (k *known) holdSlot(resp *http.Response, since time.Time) {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		k.release(since)
		return
	}
	resp.Body = onClose(resp.Body, func() { k.release(since) })
}

// passLimit keeps the send that the gate let through at now to the
// policy's Limit: it waits for the rate, then for a slot under the cap, or
// returns a *DeferredError, with nothing sent, when that wait does not fit
// (a wait for a slot is heed's estimate). It returns when the send may go.
func (c *call) passLimit(attempt int, now time.Time) (time.Time, error) {
	k, p := c.known, c.policy
	reserve := max(p.reserve, c.took)
	fits := func(w time.Duration) bool { return c.deadline.Fits(now, w, w, p.maxWait, reserve) }
	wait, ok := k.reserve(now, fits)
	if !ok {
		d := c.waitDecision(attempt, now, wait, reasonPacing, "limit")
		return now, c.deferred(&d, attempt-1)
	}
	if wait > 0 {
		if err := c.waitToSend(attempt, now, wait, wait, reasonPacing, "limit", zapcore.DebugLevel); err != nil {
			return now, err
		}
		now = time.Now()
	}
	if k.slots == nil {
		return now, nil
	}
	now, err := c.waitForSlot(attempt, now, k, "limit")
	if err != nil {
		return now, err
	}
	c.slotAt = now
	return now, nil
}

// quiet reports whether the limit keeps nothing at now: no slot held, and
// its rate's schedule not ahead of now.
func (k *known) quiet(now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.slots) == 0 && k.waiting == 0 && !k.tat.After(now)
}

// releaseSlot gives back the current send's Limit slot, when it took one:
// when resp's body is closed, or at once without a response.
func (c *call) releaseSlot(resp *http.Response) {
	if c.slotAt.IsZero() {
		return
	}
	since := c.slotAt
	c.slotAt = time.Time{}
	if resp == nil {
		c.known.release(since)
		return
	}
	c.known.holdSlot(resp, since)
}
