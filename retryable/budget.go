package retryable

import (
	"context"
	"time"

	"github.com/heed-go/heed"
)

// budget is the time one Client.Do call may spend: until end, if bounded.
type budget struct {
	end   time.Time
	bound bool
}

// budgetOf ends the budget at the earlier of ctx's deadline and start plus
// the policy's MaxElapsed.
func budgetOf(ctx context.Context, p heed.Policy, start time.Time) budget {
	var b budget
	if d, ok := ctx.Deadline(); ok {
		b = budget{end: d, bound: true}
	}
	if p.MaxElapsed > 0 {
		if end := start.Add(p.MaxElapsed); !b.bound || end.Before(b.end) {
			b = budget{end: end, bound: true}
		}
	}
	return b
}

// left is the budget remaining at now: 0 when none remains or unbounded.
func (b budget) left(now time.Time) time.Duration {
	if !b.bound {
		return 0
	}
	return max(b.end.Sub(now), 0)
}

// fits reports whether a wait (before jitter: base; with it: wait) may be
// spent in process: base is within maxWait, and the attempt after it, given
// reserve, still ends within the budget.
func (b budget) fits(now time.Time, base, wait, maxWait, reserve time.Duration) bool {
	if base > maxWait {
		return false
	}
	return !b.bound || !now.Add(wait).Add(reserve).After(b.end)
}

// waitFor waits d on a timer, or returns ctx's error if it ends first.
func waitFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
