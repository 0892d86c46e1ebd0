// "heed poll": following a job's status URL with jobpoll until a terminal
// state.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
	"github.com/heed-go/heed/jobpoll"
)

// pollUsage is the help text of "heed poll".
const pollUsage = `usage: heed poll --terminal STATE,... [--state-field status] [--running STATE,...] [--success STATE,...] [--deadline 10m] [-H 'Name: value']... [--json-log] URL

Checks a job's status URL until the job reaches a terminal state, and exits
0 only if that state is a success. Each check is a GET through heed, which
retries it within a time limit of its own (--check-deadline); the state is read
from the JSON field --state-field: "status", "properties.status",
"jobs[0].state". States match case-insensitively. Between checks it waits as
long as the status response asks (Retry-After), never less than 1s, else
backs off with jitter from --interval, doubling to --max-interval. The
deadline is checked before each wait: when the next check would come too
late, it stops at once and says when to come back. Messages name the job
by its URL without userinfo, query or fragment. On a terminal, stderr shows
the control characters of what the server sent (an error body) escaped, as
\x1b; elsewhere they are written as sent. The body on stdout is as sent.

Exit codes:
  0    the job reached a --success state; the last status body is on stdout
  1    the job reached another terminal state; the last status body is on stdout
  75   the next check would pass --deadline, or the status endpoint asked for
       a wait that cannot fit (EX_TEMPFAIL): stdout is one line
       "retry-at <RFC 3339 time>", the earliest time to check again
  22   the status endpoint answered other than 2xx, after retries
  65   a state in neither --terminal nor --running, no state in the body, or
       a status body over 1 MiB (EX_DATAERR)
  69   the status endpoint could not be reached (EX_UNAVAILABLE)
  2    bad flags or arguments
  130  interrupted

Flags (-flag and --flag are the same; flags may follow the URL):
`

// runPoll is "heed poll": follow a job with jobpoll until a terminal state.
func runPoll(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("poll", flag.ContinueOnError)
	fs.SetOutput(stderr)
	field := fs.String("state-field", "status", "`path` of the state in the JSON body: dots for members, [N] for array elements")
	var terminal, running, success listFlag
	fs.Var(&terminal, "terminal", "comma-separated `states` in which the job is finished (required)")
	fs.Var(&running, "running", "comma-separated `states` in which the job is in progress; when given,\n"+
		"any state in neither list is an error (exit 65). Default: every other state")
	fs.Var(&success, "success", "comma-separated terminal `states` that are a success (default: the first --terminal state)")
	deadline := fs.Duration("deadline", 10*time.Minute, "how long to follow the job; 0: no limit")
	checkDeadline := fs.Duration("check-deadline", jobpoll.DefaultCheckElapsed, "time limit of one check, its retries and waits included; 0: none")
	interval := fs.Duration("interval", jobpoll.DefaultFirstBackoff, "first wait between checks when the server gives no hint")
	maxInterval := fs.Duration("max-interval", jobpoll.DefaultMaxBackoff, "longest wait between checks when the server gives no hint")
	var headers headerFlags
	fs.Var(&headers, "H", "request header `'Name: value'`; repeat for more")
	jsonLog := fs.Bool("json-log", false, "log decisions as JSON lines (default: console lines)")
	target, usageErr, code, done := parseCommand("poll", pollUsage, fs, args, stderr)
	if done {
		return code
	}
	if headers.bad != nil {
		return usageErr("%v", headers.bad)
	}
	if len(terminal) == 0 {
		return usageErr("--terminal is required: the states in which the job is finished")
	}
	if _, err := jobpoll.ParsePath(*field); err != nil {
		return usageErr("--state-field: %v", err)
	}
	if headers.host != "" {
		return usageErr("-H Host: is not supported by heed poll")
	}
	if len(success) == 0 {
		success = listFlag{terminal[0]}
	}
	for _, s := range success {
		if !containsFold(terminal, s) {
			return usageErr("--success state %q is not among --terminal (%s)", s, terminal.String())
		}
	}
	if *deadline < 0 || *checkDeadline < 0 || *interval <= 0 || *maxInterval < *interval {
		return usageErr("want --deadline, --check-deadline >= 0 and 0 < --interval <= --max-interval")
	}

	ctx, stop := interruptible()
	defer stop()
	log := decisionLogger(stderr, *jsonLog)
	defer log.stop()
	base := http.DefaultTransport.(*http.Transport).Clone()
	tr := heed.New(base, heed.WithPolicy(heed.Policy{Name: "poll", MaxElapsed: *checkDeadline}), heed.WithLogger(log.Logger), heed.WithObserver(log.observe))
	defer tr.CloseIdleConnections()
	poller := &jobpoll.Poller{
		Terminal: terminal,
		Running:  running,
		Deadline: *deadline,
		Backoff:  heed.EqualJitter(*interval, *maxInterval),
		Logger:   log.Logger,
		OnWait:   log.nextCheck,
	}
	check := &jobpoll.HTTPChecker{
		URL:    target,
		Field:  *field,
		Header: headers.header,
		// Timeout bounds a check in flight too; MaxElapsed only bounds
		// heed's waits.
		Client: &http.Client{Transport: tr, Timeout: *checkDeadline},
	}
	job := jobName(target)
	st, err := poller.Poll(ctx, job, check)
	log.stop()
	errw := terminalSafe(stderr)
	if err == nil {
		stdout.Write(st.Body)
		if containsFold(success, st.State) {
			fmt.Fprintf(errw, "heed poll: job %s: %s\n", job, st.State)
			return exitOK
		}
		fmt.Fprintf(errw, "heed poll: job %s ended in %s, not a success (%s)\n", job, st.State, success.String())
		return exitFailure
	}
	return pollError(stdout, errw, err, *deadline)
}

// pollError reports why a poll ended without a terminal state and returns
// the exit code for it. The error's text is shown without the secrets of
// the URLs it quotes.
func pollError(stdout, stderr io.Writer, err error, deadline time.Duration) int {
	var (
		te *jobpoll.TimeoutError
		de *heed.DeferredError
		ue *jobpoll.UnknownStateError
		fe *jobpoll.FieldError
		be *jobpoll.BodyTooLargeError
		he *jobpoll.HTTPError
	)
	msg := rules.RedactError(err, nil)
	switch {
	case errors.As(err, &te):
		why := fmt.Sprintf("job %s still %q after %s and %d checks; the next check would pass the deadline of %s",
			te.JobID, te.LastState, te.Elapsed.Round(time.Millisecond), te.Checks, deadline)
		printRetryAt(stdout, stderr, "poll", te.NextCheck, why)
		return exitTempFail
	case errors.As(err, &de):
		why := "the status check was deferred: " + de.Reason
		if de.Status != 0 {
			why += fmt.Sprintf(" (HTTP %d)", de.Status)
		}
		printRetryAt(stdout, stderr, "poll", de.RetryAt, why)
		return exitTempFail
	case errors.As(err, &ue), errors.As(err, &fe), errors.As(err, &be):
		fmt.Fprintf(stderr, "heed poll: %s\n", msg)
		return exitDataErr
	case errors.As(err, &he):
		fmt.Fprintf(stderr, "heed poll: %s\n", msg)
		if len(he.Body) > 0 {
			body := he.Body[:min(len(he.Body), getMaxErrorBody)]
			fmt.Fprintf(stderr, "%s\n", body)
		}
		return exitHTTP
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "heed poll: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "heed poll: %s\n", msg)
	return exitUnavailable
}

// jobName is how heed poll names the job in messages: the status URL
// without userinfo, query or fragment.
func jobName(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return rules.RedactText(target)
	}
	return rules.RedactURL(u)
}

// containsFold reports whether list holds s, ignoring case, as jobpoll
// compares states.
func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}
