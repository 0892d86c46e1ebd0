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
// on it.
// Safe for concurrent use.
type timeSource struct{ base atomic.Pointer[time.Time] }

// clockRebase is how long a timeSource's reading of both clocks serves.
const clockRebase = time.Second

// now returns the current time.
func (c *timeSource) now() time.Time {
	if b := c.base.Load(); b != nil {
		if d := time.Since(*b); d >= 0 && d < clockRebase {
			return b.Add(d)
		}
	}
	t := time.Now()
	c.base.Store(&t)
	return t
}
