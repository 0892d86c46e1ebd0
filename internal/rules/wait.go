// Waiting: a timer against a context, and random spreads.

package rules

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits d on a timer, or returns ctx's error if it ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// RandUpTo returns a random duration in [0, d].
func RandUpTo(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if d == 1<<63-1 {
		return time.Duration(rand.Int64())
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}
