package rules

import (
	"context"
	"time"
)

// Budget is the time one call may spend: until End, if Bound.
type Budget struct {
	End   time.Time
	Bound bool
}

// NewBudget ends the budget at the earlier of ctx's deadline and start plus
// maxElapsed (none when 0).
func NewBudget(ctx context.Context, start time.Time, maxElapsed time.Duration) Budget {
	var b Budget
	if d, ok := ctx.Deadline(); ok {
		b = Budget{End: d, Bound: true}
	}
	if maxElapsed > 0 {
		if end := start.Add(maxElapsed); !b.Bound || end.Before(b.End) {
			b = Budget{End: end, Bound: true}
		}
	}
	return b
}

// Left is the budget remaining at now: 0 when none remains or unbounded.
func (b Budget) Left(now time.Time) time.Duration {
	if !b.Bound {
		return 0
	}
	return max(b.End.Sub(now), 0)
}

// Fits reports whether a wait (before jitter: base; with it: wait) may be
// spent in process: base is within maxWait, and the attempt after it, given
// reserve, still ends within the budget.
func (b Budget) Fits(now time.Time, base, wait, maxWait, reserve time.Duration) bool {
	if base > maxWait {
		return false
	}
	return !b.Bound || !now.Add(wait).Add(reserve).After(b.End)
}
