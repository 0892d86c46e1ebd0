// The fleet's clock: Redis's TIME, which every process of a fleet reads
// alike, and how far this process's clock is from it.

package redisgate

import (
	"context"
	"sync/atomic"
	"time"
)

// clockCheck is how often a gate measures its clock against Redis's.
const clockCheck = 30 * time.Second

// fleetClock is how far Redis's clock is ahead of this process's, as last
// measured, and how far that measure may be off (both 0 for a clock
// within that of Redis's). Every time a gate writes
// to Redis or reads from it is in Redis's clock, so that processes whose
// clocks disagree agree on when a hold ends: a hold written as "now plus a
// second" by a process whose clock is behind ends a second after that
// process's now for every process. The error of the measure is taken
// against the hold: an end goes to Redis that much later and comes back
// that much later again, and a "now" goes that much earlier, so that no
// process finds a hold over before it is, whichever measured.
type fleetClock struct {
	offset  atomic.Int64 // Redis's time less this process's, in milliseconds
	slack   atomic.Int64 // how far offset may be off, in milliseconds
	checked atomic.Int64 // when last measured, this process's Unix ms; 0: never
}

// clockSamples is how many TIME calls a measure makes; the one with the
// shortest round trip is kept, as the one answered nearest its middle.
const clockSamples = 3

// sync measures the offset, when it was not measured in the last
// clockCheck, by clockSamples TIME calls, each taken to have been answered
// halfway through its round trip. One caller measures while the others use
// the last measure; a failed measure keeps it (0 before the first), and is
// tried again at the next clockCheck.
func (g *gate) sync(ctx context.Context) {
	c := &g.clock
	now := g.now().UnixMilli()
	last := c.checked.Load()
	if last != 0 && now-last < clockCheck.Milliseconds() || !c.checked.CompareAndSwap(last, now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	defer cancel()
	best := time.Duration(-1)
	var offset time.Duration
	for range clockSamples {
		before := g.now()
		redisNow, err := bound(g.bounded, ctx, func(ctx context.Context) (time.Time, error) {
			return g.client.Time(ctx).Result()
		})
		if err != nil {
			return
		}
		after := g.now()
		if rtt := after.Sub(before); best < 0 || rtt < best {
			best, offset = rtt, redisNow.Sub(before.Add(rtt/2))
		}
	}
	// Half the round trip, and the rounding of the offset and of Redis's
	// answer to milliseconds. A clock within that of Redis's is taken as
	// right: processes on one clock, or clocks NTP keeps together, agree
	// to the millisecond, as they would without the measure.
	slack := (best / 2).Milliseconds() + 2
	off := offset.Round(time.Millisecond).Milliseconds()
	if off >= -slack && off <= slack {
		off, slack = 0, 0
	}
	c.slack.Store(slack)
	c.offset.Store(off)
}

// nowToRedis returns ms, a "now" in Unix milliseconds of this process's
// clock, in Redis's, as early as the measure may be off: a hold is not
// found over sooner.
func (g *gate) nowToRedis(ms int64) int64 {
	return ms + g.clock.offset.Load() - g.clock.slack.Load()
}

// endToRedis returns ms, an end in Unix milliseconds of this process's
// clock, in Redis's, as late as the measure may be off; 0 (none) stays 0.
func (g *gate) endToRedis(ms int64) int64 {
	if ms == 0 {
		return 0
	}
	return ms + g.clock.offset.Load() + g.clock.slack.Load()
}

// endFromRedis returns ms, an end in Unix milliseconds of Redis's clock, in
// this process's, as late as the measure may be off; 0 (none) stays 0.
func (g *gate) endFromRedis(ms int64) int64 {
	if ms == 0 {
		return 0
	}
	return ms - g.clock.offset.Load() + g.clock.slack.Load()
}
