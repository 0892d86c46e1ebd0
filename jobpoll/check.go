// Checks: what one status check of a job learns, and the Checker that
// makes it.

package jobpoll

import (
	"context"
	"time"
)

// Status is what one check learned about a job.
type Status struct {
	// State is the job's state as the server names it, such as "pending"
	// or "JobComplete".
	State string
	// Hint is the wait the server asked for before the next check; it
	// counts only when Hinted is true. A hint of zero, or a past date given
	// as zero, is raised to Poller.MinWait.
	Hint time.Duration
	// Hinted reports whether the server gave a hint.
	Hinted bool
	// Body is the status response's body, when the check has one
	// (HTTPChecker sets it), so that the caller can read the job's result
	// or error from it.
	Body []byte
}

// Checker asks once for a job's current state. A Checker leaves retrying a
// failed check to its transport: an error ends the poll.
type Checker interface {
	Check(ctx context.Context) (Status, error)
}

// CheckFunc is a function used as a Checker.
type CheckFunc func(ctx context.Context) (Status, error)

// Check calls f(ctx).
func (f CheckFunc) Check(ctx context.Context) (Status, error) { return f(ctx) }
