// The poller: checking a job until a terminal state, within a deadline.

package jobpoll

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Defaults for the zero fields of a Poller.
const (
	// DefaultMinWait is the least wait after a server hint when
	// Poller.MinWait is 0.
	DefaultMinWait = time.Second
	// DefaultFirstBackoff is the first wait, before jitter, of the backoff
	// used when Poller.Backoff is nil: heed.EqualJitter(DefaultFirstBackoff,
	// DefaultMaxBackoff).
	DefaultFirstBackoff = time.Second
	// DefaultMaxBackoff is the most the default backoff doubles to.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultMaxWait is the longest single wait Poll makes in process when
	// Poller.MaxWait is 0.
	DefaultMaxWait = time.Hour
)

var defaultBackoff = heed.EqualJitter(DefaultFirstBackoff, DefaultMaxBackoff)

// Poller follows jobs until they reach a terminal state. Set Terminal and
// whichever other fields you need; a zero field means the default given in
// its comment. A Poller may poll several jobs at once, from several
// goroutines, as long as its fields are not changed meanwhile.
type Poller struct {
	// Terminal is the set of states in which a job is finished, whether it
	// succeeded or failed. Required: Poll returns ErrNoTerminal when it is
	// empty. States match case-insensitively.
	Terminal []string
	// Running is the set of states in which a job is known to be in
	// progress. When set, a state in neither Terminal nor Running ends
	// Poll with an *UnknownStateError. Default: empty, and then every
	// non-empty state not in Terminal counts as running. An empty state is
	// always an *UnknownStateError.
	Running []string
	// Deadline is how long one Poll may follow a job. The earlier of it and
	// the context's deadline is checked before each wait: when the wait, and
	// then a check as long as the last one took, would end after it, Poll
	// returns a *TimeoutError at once instead of waiting. Default: none
	// (the context's deadline, if any, still counts).
	Deadline time.Duration
	// MaxWait is the longest single wait Poll makes in process: when the
	// wait before the next check (a server hint, the backoff, or the time
	// PollAt was given) is longer, Poll returns a *TimeoutError at once,
	// with NextCheck at the end of that wait, to be persisted, rather than
	// hold a goroutine for it. It guards against a status endpoint that
	// hints a day, or a year. Default 1h (DefaultMaxWait); negative: no
	// limit.
	MaxWait time.Duration
	// MinWait is the least wait after a server hint: a hint of 0, a past
	// date or 200ms all become MinWait. It does not apply to Backoff.
	// Default 1s.
	MinWait time.Duration
	// Backoff is the wait after check n when the status response gave no
	// hint (n is 1 after the first check). Default:
	// heed.EqualJitter(1s, 30s): half fixed, half random, doubling to 30s.
	Backoff heed.Backoff
	// Logger gets one line per decision: op "poll wait" before each wait
	// (fields job, check, state, wait, source, next_check), "poll done",
	// "poll timeout" and "poll unknown state". A job id that is a URL is
	// logged without its userinfo, query or fragment. Default (also nil):
	// none.
	Logger *zap.Logger
	// OnWait, if set, is called before each wait between checks, on Poll's
	// goroutine, with the last check's status (the zero Status before the
	// first check) and when the next check is due; a progress display
	// counts down to it. It must be quick. Default: none.
	OnWait func(last Status, next time.Time)
}

// Poll checks the job at once, then again after each wait, until a check
// finds a terminal state, and returns that check's Status with a nil error.
// It returns early with a *TimeoutError when the next check would pass the
// deadline, an *UnknownStateError for a state it does not know, a
// *CheckError when a check fails, or the context's error when the context
// ends during a wait. With an error, the Status is that of the last
// successful check, or the zero Status when there was none.
func (p *Poller) Poll(ctx context.Context, jobID string, c Checker) (Status, error) {
	return p.PollAt(ctx, jobID, c, time.Time{})
}

// PollAt is Poll with the first check not before first: the time a create
// response's Retry-After points to, or a NextCheck persisted from an
// earlier Poll. A zero or past first checks at once. The wait until first
// passes the same deadline test as every other wait.
func (p *Poller) PollAt(ctx context.Context, jobID string, c Checker, first time.Time) (Status, error) {
	if len(p.Terminal) == 0 {
		return Status{}, ErrNoTerminal
	}
	if c == nil {
		return Status{}, errors.New("jobpoll: nil Checker")
	}
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	logID := rules.RedactText(jobID) // a status URL as the id, without its secrets
	minWait := p.MinWait
	if minWait <= 0 {
		minWait = DefaultMinWait
	}
	backoff := p.Backoff
	if backoff == nil {
		backoff = defaultBackoff
	}
	maxWait := p.MaxWait
	if maxWait == 0 {
		maxWait = DefaultMaxWait
	}

	start := time.Now()
	end, bounded := ctx.Deadline()
	if p.Deadline > 0 {
		if d := start.Add(p.Deadline); !bounded || d.Before(end) {
			end, bounded = d, true
		}
	}

	var last Status
	checks := 0
	var took time.Duration // how long the last check took
	next, source := first, "PollAt"
	for {
		now := time.Now()
		wait := max(next.Sub(now), 0)
		tooLong := maxWait > 0 && wait > maxWait
		if tooLong || bounded && (checks > 0 || wait > 0) && now.Add(wait).Add(took).After(end) {
			te := &TimeoutError{JobID: jobID, LastState: last.State, Checks: checks, Elapsed: now.Sub(start), Wait: wait, NextCheck: next}
			if tooLong {
				te.MaxWait = maxWait
			} else if wait == 0 {
				te.NextCheck = now
			}
			log.Warn("poll timeout", zap.String("op", "poll timeout"), zap.String("job", logID),
				zap.Int("check", checks), zap.String("state", last.State), zap.Duration("wait", wait),
				zap.String("source", source), zap.Time("next_check", te.NextCheck), zap.Duration("elapsed", te.Elapsed))
			return last, te
		}
		if wait > 0 {
			if ce := log.Check(zapcore.InfoLevel, "poll wait"); ce != nil {
				ce.Write(zap.String("op", "poll wait"), zap.String("job", logID), zap.Int("check", checks),
					zap.String("state", last.State), zap.Duration("wait", wait), zap.String("source", source),
					zap.Time("next_check", next))
			}
			if p.OnWait != nil {
				p.OnWait(last, next)
			}
			if err := sleep(ctx, wait); err != nil {
				return last, err
			}
		}
		if err := ctx.Err(); err != nil {
			return last, err
		}

		sent := time.Now()
		st, err := c.Check(ctx)
		now = time.Now()
		took = now.Sub(sent)
		checks++
		if err != nil {
			return last, &CheckError{JobID: jobID, LastState: last.State, Checks: checks, Err: err}
		}
		last = st
		switch p.kind(st.State) {
		case stateTerminal:
			log.Info("poll done", zap.String("op", "poll done"), zap.String("job", logID),
				zap.Int("check", checks), zap.String("state", st.State), zap.Duration("elapsed", now.Sub(start)))
			return st, nil
		case stateUnknown:
			log.Warn("poll unknown state", zap.String("op", "poll unknown state"), zap.String("job", logID),
				zap.Int("check", checks), zap.String("state", st.State))
			return st, &UnknownStateError{JobID: jobID, State: st.State, Terminal: p.Terminal, Running: p.Running}
		}

		if st.Hinted {
			wait, source = max(st.Hint, minWait), "server"
		} else {
			wait, source = max(backoff(checks), 0), "backoff"
		}
		next = now.Add(wait)
	}
}

// stateKind is what a state means to a Poller.
type stateKind int

const (
	stateRunning stateKind = iota
	stateTerminal
	stateUnknown
)

// kind classifies a state against the Poller's sets.
func (p *Poller) kind(state string) stateKind {
	switch {
	case state == "":
		return stateUnknown
	case in(state, p.Terminal):
		return stateTerminal
	case len(p.Running) == 0 || in(state, p.Running):
		return stateRunning
	}
	return stateUnknown
}

// in reports whether set holds state, ignoring case.
func in(state string, set []string) bool {
	for _, s := range set {
		if strings.EqualFold(s, state) {
			return true
		}
	}
	return false
}

// sleep waits d on a timer, or returns the context's error if it ends
// first.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
