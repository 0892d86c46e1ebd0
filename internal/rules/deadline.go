// The deadline decision: how long one call may spend, and whether a wait
// fits it.

package rules

import (
	"context"
	"time"
)

// Deadline is the time one call may spend: until End, if Bound.
type Deadline struct {
	End   time.Time
	Bound bool
}

// NewDeadline ends the call at the earlier of ctx's deadline and start plus
// maxElapsed (none when 0).
func NewDeadline(ctx context.Context, start time.Time, maxElapsed time.Duration) Deadline {
	var b Deadline
	if d, ok := ctx.Deadline(); ok {
		b = Deadline{End: d, Bound: true}
	}
	if maxElapsed > 0 {
		if end := start.Add(maxElapsed); !b.Bound || end.Before(b.End) {
			b = Deadline{End: end, Bound: true}
		}
	}
	return b
}

// Left is the time remaining at now: 0 when none remains or unbounded.
func (d Deadline) Left(now time.Time) time.Duration {
	if !d.Bound {
		return 0
	}
	return max(d.End.Sub(now), 0)
}

// Fits reports whether a wait (before jitter: base; with it: wait) may be
// spent in process: base is within maxWait, and the attempt after it, given
// reserve, still ends by the deadline.
func (d Deadline) Fits(now time.Time, base, wait, maxWait, reserve time.Duration) bool {
	if base > maxWait {
		return false
	}
	return !d.Bound || !now.Add(wait).Add(reserve).After(d.End)
}
