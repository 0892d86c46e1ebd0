package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
)

// maxAttempts is how many runs may fail on one job, without a time to
// come back, before it is marked failed.
const maxAttempts = 5

// Worker creates and follows media jobs. One Run takes every job that is
// due, one at a time, until none is left or the API asks for a wait that
// does not fit the run: then it stores that job's time and returns.
type Worker struct {
	Store  *Store
	API    *API
	Poller jobpoll.Poller // Terminal and Running are set by the worker
	Lease  time.Duration  // how long a claimed job is held; 0: 10 minutes
	// RetryDelay is how long a job waits after a run failed on it without a
	// time to come back (a lost answer, a 5xx that outlasted heed's
	// attempts); attempt is 1 after the first such run.
	// Default: heed.EqualJitter(30s, 10m).
	RetryDelay heed.Backoff
	Out        io.Writer // one line per job
}

var defaultRetryDelay = heed.EqualJitter(30*time.Second, 10*time.Minute)

// Summary counts what one Run did.
type Summary struct {
	Claimed   int
	Succeeded int
	Failed    int
	Deferred  int
	NextDue   time.Time // when the next unfinished job is due; zero if none is left
}

// Run processes due jobs until none is left, the run's context ends, or a
// job is deferred.
func (w *Worker) Run(ctx context.Context) (Summary, error) {
	var sum Summary
	lease := w.Lease
	if lease <= 0 {
		lease = 10 * time.Minute
	}
	for {
		j, ok, err := w.Store.claim(ctx, time.Now(), lease)
		if err != nil {
			return sum, err
		}
		if !ok {
			break
		}
		sum.Claimed++
		stop, err := w.process(ctx, j, &sum)
		if err != nil {
			return sum, err
		}
		if stop {
			break
		}
	}
	if at, ok, err := w.Store.nextDue(context.WithoutCancel(ctx)); err != nil {
		return sum, err
	} else if ok {
		sum.NextDue = at
	}
	return sum, nil
}

// process takes one claimed job as far as this run can, and stores where
// it stands. stop says the run should end.
func (w *Worker) process(ctx context.Context, j job, sum *Summary) (stop bool, err error) {
	st, err := w.advance(ctx, &j)
	// Record the outcome even if the run's context has ended.
	save := context.WithoutCancel(ctx)
	var apiErr *APIError
	switch at, later := jobpoll.RetryAt(err); {
	case err == nil && st.State == "succeeded":
		sum.Succeeded++
		var rj remoteJob
		_ = json.Unmarshal(st.Body, &rj)
		w.say("job %d (%s): succeeded: %s", j.ID, j.RemoteID, rj.Output.URL)
		return false, w.Store.finish(save, j.ID, stateSucceeded, rj.Output.URL, "")
	case err == nil:
		sum.Failed++
		w.say("job %d (%s): %s: %s", j.ID, j.RemoteID, st.State, st.Body)
		return false, w.Store.finish(save, j.ID, stateFailed, "", st.State+": "+string(st.Body))
	case later:
		// heed deferred (the API asked for a longer wait than this run
		// has), or the job outlived the run's deadline. Either way: not
		// before at, and not by this process.
		sum.Deferred++
		w.say("job %d: deferred until %s: %v", j.ID, at.UTC().Format(time.RFC3339Nano), reason(err))
		return true, w.Store.deferUntil(save, j.ID, at, err.Error())
	case ctx.Err() != nil:
		w.say("job %d: interrupted: %v", j.ID, ctx.Err())
		return true, w.Store.release(save, j.ID)
	case errors.As(err, &apiErr) && apiErr.Status >= 400 && apiErr.Status < 500 && apiErr.Status != 429 && apiErr.Status != 408:
		sum.Failed++
		w.say("job %d: rejected: %v", j.ID, err)
		return false, w.Store.finish(save, j.ID, stateFailed, "", err.Error())
	default:
		// A lost answer, a 5xx that outlasted heed's attempts: the next
		// run takes the job again, and reconciles a create by its key.
		delay := w.RetryDelay
		if delay == nil {
			delay = defaultRetryDelay
		}
		at := time.Now().Add(delay(j.Attempts + 1))
		w.say("job %d: failed this run (attempt %d of %d), due again at %s: %v", j.ID, j.Attempts+1, maxAttempts, at.UTC().Format(time.RFC3339), err)
		return false, w.Store.retryLater(save, j.ID, j.Attempts+1, at, err.Error())
	}
}

// advance creates the job if the API has none for it yet, then follows it
// to a terminal status.
func (w *Worker) advance(ctx context.Context, j *job) (jobpoll.Status, error) {
	var first time.Time
	if j.RemoteID == "" && j.State == stateCreating {
		// A create was sent before and its answer never stored: ask the
		// API what it made of that key, rather than creating again.
		rj, found, err := w.API.FindByKey(ctx, j.Key)
		if err != nil {
			return jobpoll.Status{}, err
		}
		if found {
			j.RemoteID = rj.ID
			w.say("job %d: reconciled by key: the API has it as %s", j.ID, rj.ID)
			if err := w.Store.setState(ctx, j.ID, stateFollowing, j.RemoteID); err != nil {
				return jobpoll.Status{}, err
			}
		}
	}
	if j.RemoteID == "" {
		// Persist the intent before sending, so that a crash or a lost
		// answer leads the next run to reconcile, not to create again.
		if err := w.Store.setState(ctx, j.ID, stateCreating, ""); err != nil {
			return jobpoll.Status{}, err
		}
		rj, next, err := w.API.Create(ctx, j.Key, j.Prompt)
		if err != nil {
			return jobpoll.Status{}, err
		}
		j.RemoteID, first = rj.ID, next
		w.say("job %d: created as %s", j.ID, rj.ID)
		if err := w.Store.setState(ctx, j.ID, stateFollowing, j.RemoteID); err != nil {
			return jobpoll.Status{}, err
		}
	}
	p := w.Poller
	p.Terminal, p.Running = terminalStatuses, runningStatuses
	return p.PollAt(ctx, j.RemoteID, w.API.Checker(j.RemoteID), first)
}

// reason is the short cause of a deferral.
func reason(err error) string {
	var de *heed.DeferredError
	if errors.As(err, &de) {
		return fmt.Sprintf("heed: %s %s: %s (status %d), asked to wait %s", de.Method, de.URL, de.Reason, de.Status, de.Wait)
	}
	var te *jobpoll.TimeoutError
	if errors.As(err, &te) {
		if te.LastState == "" {
			return "jobpoll: the first check the API asked for comes after the run's deadline"
		}
		return fmt.Sprintf("jobpoll: still %q at the run's deadline", te.LastState)
	}
	return err.Error()
}

func (w *Worker) say(format string, args ...any) {
	if w.Out != nil {
		fmt.Fprintf(w.Out, format+"\n", args...)
	}
}
