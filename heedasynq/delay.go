// The delay asynq is given for a deferral: the time until RetryAt, rounded
// up to the whole second asynq schedules in.

package heedasynq

import "time"

// minDelay is the delay given for a RetryAt already past: the smallest
// positive one, so the task is eligible at asynq's next check.
const minDelay = time.Nanosecond

// untilEligible returns the delay from now after which asynq runs a retried
// task no earlier than retryAt. asynq adds the delay to its own clock
// reading, taken a moment after now, and keeps the sum in whole Unix
// seconds, truncated; it moves the task back to its queue once that second
// has begun. So the delay reaches the first whole second at or after
// retryAt: truncation then never lands before retryAt.
func untilEligible(retryAt, now time.Time) time.Duration {
	at := retryAt.Truncate(time.Second) // also drops the monotonic reading: asynq uses the wall clock
	if at.Before(retryAt) {
		at = at.Add(time.Second)
	}
	d := at.Sub(now)
	if d < minDelay {
		return minDelay
	}
	return d
}
