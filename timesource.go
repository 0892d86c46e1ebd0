// The time source: a request's one reading of the time, from the monotonic
// clock alone.

package heed

import (
	"sync/atomic"
	"time"
)

// timeSource reads the time for a Transport's requests. time.Now reads two
// clocks, the wall's and the monotonic; a timeSource reads the monotonic one
// alone and adds what it measures to a reading of both taken less than
// clockRebase before, which it takes again once that is older. A time it
// gives compares with any other by the monotonic clock, as time.Now's
// does. Its wall reading misses a step of the wall clock for up to
// clockRebase, and a slew's drift over as long (at most half a millisecond
// at NTP's 500 ppm), so nothing that must agree with the wall (a server's
// date, whether a scope's state is over, see Transport.scope) is decided
// on it. Only a Transport with its own gate uses one (Transport.RoundTrip):
// a shared gate keeps times on the wall clock. Safe for concurrent use.
type timeSource struct{ base atomic.Pointer[reading] }

// reading is a time and its mono count.
type reading struct {
	t time.Time
	m int64
}

// clockRebase is how long a timeSource's reading of both clocks serves.
const clockRebase = time.Second

// monoEpoch is what mono counts from.
var monoEpoch = time.Now()

// monoOffset keeps every mono reading above zero, which marks none.
const monoOffset = int64(1) << 62

// mono returns t as a count of nanoseconds on the monotonic clock, for
// the times a Transport keeps in atomic words and compares among
// themselves: a step of the wall clock moves none of them, and a time from
// a timeSource and one from time.Now agree. A time with no monotonic
// reading (testing/synctest's) counts on the wall clock, as every other
// such time does. Never zero.
// Times more than 2^62 ns (about 146 years) from monoEpoch count as that.
func mono(t time.Time) int64 {
	return min(max(int64(t.Sub(monoEpoch)), 1-monoOffset), monoOffset-1) + monoOffset
}

// wallAt is the wall clock's reading at t, a time on the monotonic clock
// (one a timeSource gave, or one after it): t's own wall reading may trail
// a step of the wall clock (timeSource), and a time handed out (a
// DeferredError's RetryAt) is read on the wall by whoever gets it.
func wallAt(t time.Time) time.Time {
	now := time.Now()
	return now.Add(t.Sub(now)).Round(0)
}

// now returns the current time, and its mono count.
func (c *timeSource) now() (time.Time, int64) {
	if b := c.base.Load(); b != nil {
		if d := time.Since(b.t); d >= 0 && d < clockRebase {
			return b.t.Add(d), b.m + int64(d)
		}
	}
	t := time.Now()
	r := &reading{t, mono(t)}
	c.base.Store(r)
	return r.t, r.m
}
