// The learned concurrency cap: the most sends of a scope in flight at
// once, learned from refusals that follow the number in flight rather
// than the time.

package heed

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// ceiling is a scope's learned cap on sends in flight. A server that limits
// requests in flight (a worker pool, a gateway's max-in-flight, ElevenLabs'
// too_many_concurrent_requests) refuses a send only when as many as it
// allows are in its hands, so the number in flight when a refused send
// went, its level, is higher than any a served send went at. A refusal
// with no hint from a herd whose level is above the highest served lately
// is taken as such: the cap becomes one below it, the rate is left alone,
// and the refused request waits for a slot instead of backing off. A
// refusal at a level that was served is the rate's (adaptive.go), so the
// cap never falls below what the server took, and a slow rate limiter
// cannot drive it down.
//
// The cap probes one above itself after probe rounds of served sends (a
// round is cap sends); a probe refused doubles the rounds to the next, up
// to ceilingMaxRounds, and one served halves them.
type ceiling struct {
	on atomic.Bool

	mu       sync.Mutex
	limit    int64   // the cap; 0: none yet
	inflight *flight // the scope's sends in flight: the limiter's
	admitted int64   // sends let through, not yet gone
	line     []chan struct{}
	// the highest level a served send went at, this second and the last
	top, lastTop int64
	topSecond    int64
	rounds       int64         // rounds of served sends between probes
	served       int64         // served sends since the cap last moved
	moved        time.Time     // when the cap last fell
	grown        bool          // it fell since the first burst: it grows by one a round, no faster
	probed       int64         // the level the cap last grew to, until a send at it is served; 0: none
	nextGo       time.Time     // the soonest the next send under the cap may go
	grewAt       time.Time     // when the cap last grew in slow start
	took         time.Duration // a served send's time, smoothed
	slowest      time.Duration // the slowest refusal the cap took
}

// ceilingMinService is the shortest served send's time, smoothed, at which
// the cap learns: a server that answers in less holds sends too briefly
// for their number in flight to be its limit, and a rate limiter in front
// of it refuses at the door as fast as it serves.
const ceilingMinService = 10 * time.Millisecond

// ceilingMaxRounds bounds the rounds between probes.
const ceilingMaxRounds = 32

// seen returns the highest level served lately.
func (c *ceiling) seen(now time.Time) int64 {
	if s := now.Unix(); s != c.topSecond {
		if s == c.topSecond+1 {
			c.lastTop = c.top
		} else {
			c.lastTop = 0
		}
		c.top, c.topSecond = 0, s
	}
	return max(c.top, c.lastTop)
}

// refused accounts for a refusal with no hint, of a send that went at
// level, with other sends in flight; it reports whether it was the cap's.
// inflight is the limiter's count of the scope's sends in flight, which the
// cap keeps below it.
func (c *ceiling) refused(level int64, sent, now time.Time, inflight *flight) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	took := now.Sub(sent)
	if level <= 0 {
		return false // not known: the rate's
	}
	if c.took > 0 && (took > c.took/2 || c.took < ceilingMinService) {
		// Refused no sooner than it would have been served: not at the
		// door, as a server full of sends refuses. The rate's.
		return false
	}
	c.slowest = max(c.slowest, took)
	seen := c.seen(now)
	if c.limit == 0 {
		c.limit, c.rounds, c.inflight, c.moved = max(level-1, 1), 1, inflight, now
		c.on.Store(true)
		return true
	}
	if !sent.After(c.moved) {
		// Of the sends out when the cap last fell: the burst it fell for,
		// whose lowest level bounds it.
		c.limit = max(min(c.limit, level-1), 1)
		return true
	}
	if level > c.limit {
		return true // went above a cap that has fallen since: nothing new
	}
	// A send at the cap (or one below, as sends answered together may
	// be counted out of turn), or at or above the levels served lately
	// (within one, for the same reason), found the server full. One
	// further below both, at a level served at, is the rate's. (Judging a
	// send at the highest level served the rate's let refusals at a cap
	// that had grown past the server's drive the rate to its floor.)
	if level < c.limit-1 && level < seen-1 {
		return false
	}
	// The cap falls one at a time, once a burst, so that sends counted out
	// of turn do not drive it down.
	if limit := max(min(level-1, c.limit-1), 1); limit < c.limit {
		c.limit, c.moved, c.grown, c.probed = limit, now, true, 0
		c.rounds = min(2*c.rounds, ceilingMaxRounds)
	}
	c.served = 0
	return true
}

// answered accounts for a served send that went at level and took took.
func (c *ceiling) answered(level int64, took time.Duration, now time.Time) {
	if level <= 0 {
		return // not sent after all
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen(now)
	c.top = max(c.top, level)
	if c.took == 0 {
		c.took = took
	} else {
		c.took = (7*c.took + took) / 8
	}
	if c.slowest > c.took/2 || c.took < ceilingMinService {
		// The refusals it learned from took as long as service does, or
		// service is too brief to be held up by a cap: they were not a
		// full server's at the door. Leave them to the rate, and let every
		// waiting send go.
		c.limit, c.slowest = 0, 0
		c.on.Store(false)
		for _, w := range c.line {
			close(w)
		}
		c.admitted += int64(len(c.line))
		c.line = nil
		return
	}
	if level < c.limit {
		return // the cap was not full: it is not what held the sends back
	}
	if c.probed > 0 && level >= c.probed {
		c.rounds = max(c.rounds/2, 1) // the last growth's probe was served
		c.probed = 0
	}
	c.served++
	// Until it first falls, the cap grows by half a served send that went
	// at it, as TCP's slow start grows by a round; then by one a round.
	if !c.grown {
		if now.Sub(c.grewAt) >= c.took {
			c.limit += max(c.limit/2, 1)
			c.served, c.probed, c.grewAt = 0, c.limit, now
		}
		return
	}
	if c.served >= c.rounds*c.limit {
		c.limit++
		c.served = 0
		c.probed = c.limit
	}
}

// spacing returns how long a send let through at now waits before it goes:
// sends under the cap go no closer together than ceilingSpread of a served
// send's time over the cap, the pace at which a full server of cap sends
// frees room (Little's law). A server full of sends refuses a send above
// the cap all the same; a rate limiter that refused sends going together,
// and so looked like a cap, serves them spaced.
func (c *ceiling) spacing(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit == 0 {
		return 0 // off: the line it let go goes at once
	}
	at := c.nextGo
	if at.Before(now) {
		at = now
	}
	c.nextGo = at.Add(time.Duration(ceilingSpread * float64(c.took) / float64(max(c.limit, 1))))
	return at.Sub(now)
}

// ceilingSpread is the share of a send's fair spacing under the cap that
// sends keep at the least: below 1, so that answers that come back early
// are not held up.
const ceilingSpread = 0.8

// expected returns how long a send asking for a slot now may wait: the
// sends waiting ahead of it, by groups of the cap, times a send's smoothed
// time; 0 when a slot is free.
func (c *ceiling) expected() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.free() && len(c.line) == 0 {
		return 0
	}
	rounds := int64(len(c.line))/max(c.limit, 1) + 1
	return time.Duration(rounds) * max(c.took, time.Millisecond)
}

// acquire takes a slot, waiting at most d for one (d 0: no bound); it
// reports whether it got one, or returns the context's error.
func (c *ceiling) acquire(ctx context.Context, d time.Duration) (bool, error) {
	c.mu.Lock()
	if c.free() && len(c.line) == 0 {
		c.admitted++
		c.mu.Unlock()
		return true, nil
	}
	ch := make(chan struct{})
	c.line = append(c.line, ch)
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
	for i, w := range c.line {
		if w == ch {
			c.line = append(c.line[:i], c.line[i+1:]...)
			return false, err
		}
	}
	// Handed a slot as the wait ended: give it on.
	c.admitted--
	c.handOff()
	return false, err
}

// queued reports whether sends wait for a slot.
func (c *ceiling) queued() bool {
	if !c.on.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.line) > 0
}

// free reports whether one more send may be let through.
func (c *ceiling) free() bool {
	return c.limit == 0 || c.inflight.load()+c.admitted < c.limit
}

// went accounts for a send let through that went, or, with gone false,
// that did not after all.
func (c *ceiling) went(gone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.admitted--
	if !gone {
		c.handOff()
	}
}

// answer lets the sends waiting go into the room an answer made.
func (c *ceiling) answer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handOff()
}

// handOff gives free slots to the sends waiting, in turn.
func (c *ceiling) handOff() {
	for len(c.line) > 0 && c.free() {
		close(c.line[0])
		c.line = c.line[1:]
		c.admitted++
	}
}

// passCeiling waits for a slot under the scope's learned cap, or returns a
// *DeferredError, with nothing sent, when the expected wait (heed's
// estimate) does not fit. It returns when the send may go.
func (c *call) passCeiling(attempt int, now time.Time) (time.Time, error) {
	ceil := &c.local.limiter.ceil
	now, err := c.waitForSlot(attempt, now, ceil, "concurrency")
	if err != nil {
		return now, err
	}
	c.ceilingHeld = true
	// The spacing is heed's, not the server's: a send whose time cannot
	// cover it goes without it.
	if w := ceil.spacing(now); w > 0 && c.deadline.Fits(now, w, w, c.policy.maxWait, max(c.policy.reserve, c.took)) {
		if err := rules.Sleep(c.ctx, w); err != nil {
			return now, err
		}
		now = time.Now()
	}
	return now, nil
}

// wentCeiling accounts for the send let through under the learned cap, if
// it was: gone, counted in flight from now on, or not sent after all.
func (c *call) wentCeiling(gone bool) {
	if c.ceilingHeld {
		c.ceilingHeld = false
		c.local.limiter.ceil.went(gone)
	}
}
