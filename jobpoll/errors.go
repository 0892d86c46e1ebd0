// Errors: why a poll ended without a terminal state.

package jobpoll

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// ErrNoTerminal is returned by Poll, before any check, when the Poller has
// no terminal states: without them no state could ever end the poll.
var ErrNoTerminal = errors.New("jobpoll: Poller.Terminal is empty")

// TimeoutError is returned by Poll, at once, when the wait before the next
// check would pass the job's deadline (Poller.Deadline, or the context's
// deadline if earlier), or is longer than Poller.MaxWait. The job is not
// failed: it was still running at the last check, and may be checked again
// from NextCheck on. Persist that.
//
// A TimeoutError does not match heed.ErrDeferred: errors.Is(err,
// heed.ErrDeferred) means that a *heed.DeferredError is in the chain, from
// the status check's transport, and errors.As finds it. RetryAt reads the
// time to come back from either.
type TimeoutError struct {
	// JobID is the job's id, as given to Poll. Error shows it without
	// the userinfo, query or fragment of a URL.
	JobID string
	// LastState is the state at the last check; "" when there was none.
	LastState string
	// Checks is how many checks this Poll made.
	Checks int
	// Elapsed is how long this Poll followed the job.
	Elapsed time.Duration
	// Wait is the wait that did not fit: the server's hint, or the backoff.
	Wait time.Duration
	// NextCheck is the earliest time the job should be checked again: the
	// end of Wait. It is never earlier than the server asked.
	NextCheck time.Time
	// MaxWait is the Poller's MaxWait when Wait was longer than it, and 0
	// when the deadline ended the poll.
	MaxWait time.Duration
}

// Error describes the timeout.
func (e *TimeoutError) Error() string {
	var b strings.Builder
	b.WriteString("jobpoll: job ")
	b.WriteString(rules.RedactText(e.JobID))
	if e.MaxWait > 0 {
		b.WriteString(" not finished, and its next check is more than ")
		b.WriteString(e.MaxWait.String())
		b.WriteString(" (MaxWait) away")
	} else {
		b.WriteString(" not finished within its deadline")
	}
	if e.LastState != "" {
		b.WriteString(": state ")
		b.WriteString(strconv.Quote(e.LastState))
	}
	b.WriteString(" after ")
	b.WriteString(readable(e.Elapsed).String())
	b.WriteString(" and ")
	b.WriteString(strconv.Itoa(e.Checks))
	if e.Checks == 1 {
		b.WriteString(" check")
	} else {
		b.WriteString(" checks")
	}
	b.WriteString("; next check at ")
	b.WriteString(e.NextCheck.UTC().Format(time.RFC3339Nano))
	b.WriteString(" (wait ")
	b.WriteString(readable(e.Wait).String())
	b.WriteByte(')')
	return b.String()
}

// readable rounds d for a message: to the millisecond from a millisecond
// up, so that a wait of an hour less a few nanoseconds reads as 1h0m0s.
// The fields keep the exact values.
func readable(d time.Duration) time.Duration {
	if d < time.Millisecond && d > -time.Millisecond {
		return d
	}
	return d.Round(time.Millisecond)
}

// Timeout reports true, as net.Error does for timeouts.
func (e *TimeoutError) Timeout() bool { return true }

// UnknownStateError is returned by Poll when a check finds a state that is
// in neither Poller.Terminal nor Poller.Running (when Running is set), or an
// empty state. The job may be anything: it is not taken as still running.
type UnknownStateError struct {
	// JobID is the job's id, as given to Poll. Error shows it without
	// the userinfo, query or fragment of a URL.
	JobID string
	// State is the state the check found.
	State string
	// Terminal and Running are the Poller's known states.
	Terminal, Running []string
}

// Error describes the unknown state and the known ones.
func (e *UnknownStateError) Error() string {
	var b strings.Builder
	b.WriteString("jobpoll: job ")
	b.WriteString(rules.RedactText(e.JobID))
	b.WriteString(": unknown state ")
	b.WriteString(strconv.Quote(e.State))
	b.WriteString(" (terminal: ")
	b.WriteString(strings.Join(e.Terminal, ", "))
	if len(e.Running) > 0 {
		b.WriteString("; running: ")
		b.WriteString(strings.Join(e.Running, ", "))
	}
	b.WriteByte(')')
	return b.String()
}

// CheckError is returned by Poll when a check of the job failed: the status
// endpoint answered with an error status after its transport's retries, or
// could not be reached, or its transport deferred (Err then wraps a
// *heed.DeferredError, whose RetryAt says when to come back). It says
// nothing about the job itself.
type CheckError struct {
	// JobID is the job's id, as given to Poll. Error shows it without
	// the userinfo, query or fragment of a URL.
	JobID string
	// LastState is the state at the last successful check; "" when there
	// was none.
	LastState string
	// Checks is how many checks this Poll made, the failed one included.
	Checks int
	// Err is the check's error.
	Err error
}

// Error describes the failed check. It shows no URL's userinfo, query or
// fragment: the URLs that Err's text quotes (net/http's *url.Error quotes
// the status URL, or a redirect's Location, whole) and a JobID that is a
// URL are shown without them. Err itself is kept as it is, for errors.Is
// and errors.As.
func (e *CheckError) Error() string {
	var b strings.Builder
	b.WriteString("jobpoll: job ")
	b.WriteString(rules.RedactText(e.JobID))
	b.WriteString(": check ")
	b.WriteString(strconv.Itoa(e.Checks))
	b.WriteString(" failed")
	if e.LastState != "" {
		b.WriteString(" (last state ")
		b.WriteString(strconv.Quote(e.LastState))
		b.WriteByte(')')
	}
	b.WriteString(": ")
	b.WriteString(rules.RedactError(e.Err, nil))
	return b.String()
}

// Unwrap returns the check's error.
func (e *CheckError) Unwrap() error { return e.Err }

// RetryAt returns when a job that Poll left unfinished may be checked
// again: the NextCheck of a *TimeoutError, or the RetryAt of a
// *heed.DeferredError anywhere in err's chain. ok is false for any other
// error: those need a person or a code change, not a later time.
func RetryAt(err error) (at time.Time, ok bool) {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.NextCheck, true
	}
	var de *heed.DeferredError
	if errors.As(err, &de) {
		return de.RetryAt, true
	}
	return time.Time{}, false
}
