// Snoozing: how long River is asked to put a deferred job away.

package heedriver

import "time"

// snoozeFor returns the snooze that makes a job eligible no earlier than
// retryAt, reckoned from now: the time left, truncated to the millisecond,
// plus 2 ms, so more than 1 ms and at most 2 ms past it, because River's
// SQLite driver stores times rounded to the nearest millisecond (River adds
// the snooze to its own now, later than this one). A retryAt already past
// gives 0: the job is available at once, and fetched later still.
func snoozeFor(retryAt, now time.Time) time.Duration {
	d := retryAt.Sub(now)
	if d <= 0 {
		return 0
	}
	return d.Truncate(time.Millisecond) + 2*time.Millisecond
}
