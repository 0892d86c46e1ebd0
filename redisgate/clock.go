// The fleet's clock: Redis's TIME, which every process of a fleet reads
// alike, and how far this process's clock is from it.

package redisgate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// clockCheck is how often a gate measures its clock against Redis's.
const clockCheck = 30 * time.Second

// fleetClock is how far Redis's clock is ahead of this process's, as last
// measured, and how far that measure may be off (both 0 for a clock
// within that of Redis's). Every time a gate writes to Redis or reads from
// it is in Redis's clock, so that processes whose clocks disagree agree on
// when a hold ends: a hold written as "now plus a second" by a process
// whose clock is behind ends a second after that process's now for every
// process. The error of the measure is taken against the hold: an end goes
// to Redis that much later and comes back that much later again, and a
// "now" goes that much earlier, so that no process finds a hold over before
// it is, whichever measured.
type fleetClock struct {
	measure atomic.Pointer[clockMeasure] // nil: never measured
	// checked is when it was last measured, or a failed measure is to be
	// tried again, in nanoseconds of the monotonic clock since clockBase,
	// so that a step of the wall clock does not put off the next measure;
	// 0: never.
	checked atomic.Int64
	// first is closed once the first measure has ended, measured or not.
	first     chan struct{}
	firstOnce sync.Once
}

// newFleetClock returns a fleetClock never measured.
func newFleetClock() *fleetClock { return &fleetClock{first: make(chan struct{})} }

// firstEnded closes c.first, once.
func (c *fleetClock) firstEnded() { c.firstOnce.Do(func() { close(c.first) }) }

// awaitFirst waits, until ctx ends, for the first measure to end, if no
// measure was made yet.
func (c *fleetClock) awaitFirst(ctx context.Context) {
	if c.measure.Load() != nil {
		return
	}
	select {
	case <-c.first:
	case <-ctx.Done():
	}
}

// clockMeasure is one measure of a fleetClock, in milliseconds.
type clockMeasure struct{ offset, slack int64 }

// clockBase is the origin of fleetClock.checked.
var clockBase = time.Now()

// clockSamples is how many TIME calls a measure makes; the one with the
// shortest round trip is kept, as the one answered nearest its middle.
const clockSamples = 3

// clockRetry is how soon a failed measure is tried again.
const clockRetry = time.Second

// timeScript reads Redis's clock on the node of the key it is given, so
// that every process of a fleet, in a Cluster too, reads the same one.
var timeScript = redis.NewScript(`return redis.call('TIME')`)

// sync measures the offset, when it was not measured in the last
// clockCheck, by clockSamples TIME calls, each taken to have been answered
// halfway through its round trip. One caller measures while the others use
// the last measure, or, while the first is under way, wait for it, until
// their ctx ends. A failed measure keeps the last, and is tried again after
// clockRetry: until one succeeds, a process whose first measure failed
// takes its own clock as Redis's (an offset of 0), without waiting.
func (g *gate) sync(ctx context.Context) {
	c := g.clock
	now := int64(time.Since(clockBase)) + 1
	last := c.checked.Load()
	if last != 0 && now-last < int64(clockCheck) || !c.checked.CompareAndSwap(last, now) {
		c.awaitFirst(ctx)
		return
	}
	defer c.firstEnded()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	defer cancel()
	best := time.Duration(-1)
	var offset time.Duration
	for range clockSamples {
		before := g.now()
		redisNow, err := bound(g.bounded, ctx, func(ctx context.Context) (time.Time, error) {
			return g.redisTime(ctx)
		})
		if err != nil {
			c.checked.CompareAndSwap(now, now-int64(clockCheck-clockRetry))
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
	m := &clockMeasure{offset: offset.Round(time.Millisecond).Milliseconds(), slack: (best / 2).Milliseconds() + 2}
	if m.offset >= -m.slack && m.offset <= m.slack {
		m = &clockMeasure{}
	}
	c.measure.Store(m)
}

// redisTime reads Redis's clock, on the node of the gate's clock key.
func (g *gate) redisTime(ctx context.Context) (time.Time, error) {
	// The key only routes the call: the script reads and writes nothing.
	res, err := timeScript.Run(ctx, g.client, []string{g.prefix + "{clock}"}).Int64Slice()
	if err != nil {
		return time.Time{}, err
	}
	if len(res) != 2 {
		return time.Time{}, fmt.Errorf("redisgate: TIME: unexpected reply %v", res)
	}
	return time.Unix(res[0], res[1]*int64(time.Microsecond)), nil
}

// measured is the last measure; zero before the first.
func (g *gate) measured() clockMeasure {
	if m := g.clock.measure.Load(); m != nil {
		return *m
	}
	return clockMeasure{}
}

// nowToRedis returns ms, a "now" in Unix milliseconds of this process's
// clock, in Redis's, as early as the measure may be off: a hold is not
// found over sooner.
func (g *gate) nowToRedis(ms int64) int64 {
	m := g.measured()
	return ms + m.offset - m.slack
}

// endToRedis returns ms, an end in Unix milliseconds of this process's
// clock, in Redis's, as late as the measure may be off; 0 (none) stays 0.
func (g *gate) endToRedis(ms int64) int64 {
	if ms == 0 {
		return 0
	}
	m := g.measured()
	return ms + m.offset + m.slack
}

// endFromRedis returns ms, an end in Unix milliseconds of Redis's clock, in
// this process's, as late as the measure may be off; 0 (none) stays 0.
func (g *gate) endFromRedis(ms int64) int64 {
	if ms == 0 {
		return 0
	}
	m := g.measured()
	return ms - m.offset + m.slack
}
