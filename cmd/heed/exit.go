// Exit codes: how "heed get" and "heed poll" tell a script what happened.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit codes of "heed get" and "heed poll". They follow curl -f and
// sysexits.h, so that shell scripts and schedulers can tell the cases
// apart.
const (
	exitOK          = 0   // get: a 2xx response; poll: a success state
	exitFailure     = 1   // get: any other error; poll: a terminal state that is not a success
	exitUsage       = 2   // bad flags or arguments
	exitHTTP        = 22  // a response other than 2xx, after retries (as curl -f)
	exitDataErr     = 65  // poll: the state is unknown or missing, or the status body too large (EX_DATAERR)
	exitUnavailable = 69  // poll: the status endpoint could not be reached (EX_UNAVAILABLE)
	exitTempFail    = 75  // deferred: try again at the time printed as "retry-at" (EX_TEMPFAIL)
	exitInterrupted = 130 // interrupted by SIGINT or SIGTERM
)

// retryAtLine returns the line that tells a scheduler when to try again:
// "retry-at " and t in RFC 3339, UTC. t is rounded up to the whole second,
// so that the printed time is never earlier than the one heed computed.
func retryAtLine(t time.Time) string {
	return "retry-at " + ceilSecond(t).UTC().Format(time.RFC3339)
}

// ceilSecond rounds t up to a whole second, so a time shown without its
// fraction is never earlier than t.
func ceilSecond(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

// printRetryAt writes the retry-at line to stdout, where it is all the
// command prints, and a sentence for people to stderr.
func printRetryAt(stdout, stderr io.Writer, cmd string, at time.Time, why string) {
	fmt.Fprintln(stdout, retryAtLine(at))
	fmt.Fprintf(stderr, "heed %s: %s; try again at %s (in %s)\n", cmd, why,
		ceilSecond(at).Local().Format(time.RFC3339), time.Until(at).Round(time.Second))
}

// interruptible returns a context that ends on SIGINT or SIGTERM, so that a
// wait ends at once and the command exits with exitInterrupted.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
