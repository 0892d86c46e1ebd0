// Pausing a queue while heed holds its API, and the stored job that
// resumes it.

package heedriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// resumeKind is the kind of ResumeArgs jobs.
const resumeKind = "heedriver_resume"

// ResumeArgs is the job that resumes Queue, which a Middleware with
// WithPauseQueue paused when a job of it was deferred for a wait the
// server set. It is inserted in the resume queue, scheduled at the
// deferral's RetryAt, before the queue is paused; so the resumption is
// stored in the database, not in a timer of the process that paused: if
// that process dies, any client working the resume queue resumes the
// queue at RetryAt. It runs no earlier than RetryAt, and within about one
// FetchPollInterval of the resume queue after it (the Middleware stores it
// ready to fetch; see InsertMany).
//
// The Middleware pauses only a queue that is not paused: one paused by an
// operator, or already for another deferral, keeps that pause and gets no
// resumption of its own. A ResumeArgs job leaves its queue paused when
// another ResumeArgs job of the same queue is pending (available,
// scheduled or retryable) and scheduled later than now: a stale
// resumption, from a pause that ended and was followed by a longer one,
// does not end the longer one early. Otherwise it resumes the queue, whoever
// paused it since: an operator who pauses a queue heedriver paused should
// expect it to resume.
//
// What is guaranteed: a queue heedriver paused is never left paused with no
// resumption to come, since a ResumeArgs job leaves it paused only for a
// later one, which runs in turn; two due at once both resume it. A queue is
// not resumed before the time of the latest ResumeArgs job of it pending
// when the resumption looks, but a pause that lands between that look and
// the resumption (milliseconds) can be ended early: the jobs fetched then
// meet heed's gate, are deferred, and the next deferral pauses the queue
// again.
type ResumeArgs struct {
	Queue string `json:"queue"` // the queue to resume
}

// Kind returns "heedriver_resume", the kind ResumeWorker works.
func (ResumeArgs) Kind() string { return resumeKind }

// ResumeWorker works ResumeArgs jobs: it resumes their queue with
// Client.QueueResume, unless another ResumeArgs job of that queue is
// pending and scheduled later (see ResumeArgs). Register it on the Workers
// of every client that works the resume queue given to WithPauseQueue:
//
//	river.AddWorker(workers, &heedriver.ResumeWorker[pgx.Tx]{})
//
// A queue that no longer exists (River deletes queues no client has worked
// for a while) is nothing to resume and not an error. Safe for concurrent
// use.
type ResumeWorker[TTx any] struct {
	river.WorkerDefaults[ResumeArgs]
}

// Work resumes job.Args.Queue, or leaves it paused for a later resumption.
func (w *ResumeWorker[TTx]) Work(ctx context.Context, job *river.Job[ResumeArgs]) error {
	client, err := river.ClientFromContextSafely[TTx](ctx)
	if err != nil {
		return fmt.Errorf("heedriver: resuming queue %q: %w", job.Args.Queue, err)
	}
	later, err := laterResume(ctx, client, job.ID, job.Args.Queue, time.Now())
	if err != nil {
		return fmt.Errorf("heedriver: resuming queue %q: %w", job.Args.Queue, err)
	}
	if later {
		return nil
	}
	err = client.QueueResume(ctx, job.Args.Queue, nil)
	if err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("heedriver: resuming queue %q: %w", job.Args.Queue, err)
	}
	return nil
}

// resumePage is how many ResumeArgs jobs laterResume reads at a time.
const resumePage = 100

// laterResume reports whether a ResumeArgs job of queue other than self is
// pending and scheduled after now. It reads the pending ResumeArgs jobs
// latest first and stops at the first scheduled at or before now.
func laterResume[TTx any](ctx context.Context, client *river.Client[TTx], self int64, queue string, now time.Time) (bool, error) {
	params := river.NewJobListParams().
		Kinds(resumeKind).
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable).
		OrderBy(river.JobListOrderByScheduledAt, river.SortOrderDesc).
		First(resumePage)
	for {
		res, err := client.JobList(ctx, params)
		if err != nil {
			return false, err
		}
		for _, j := range res.Jobs {
			if !j.ScheduledAt.After(now) {
				return false, nil
			}
			var args ResumeArgs
			if j.ID != self && json.Unmarshal(j.EncodedArgs, &args) == nil && args.Queue == queue {
				return true, nil
			}
		}
		if len(res.Jobs) < resumePage {
			return false, nil
		}
		params = params.After(res.LastCursor)
	}
}

// pause pauses queue, unless it is paused already, after storing the
// ResumeArgs job that resumes it at at. The job goes first: a process that
// dies between the two leaves a resumption of a queue never paused, which
// does no harm, rather than a pause that never ends.
func (m *Middleware[TTx]) pause(ctx context.Context, queue string, at time.Time) error {
	client, err := river.ClientFromContextSafely[TTx](ctx)
	if err != nil {
		return fmt.Errorf("heedriver: pausing queue %q: %w", queue, err)
	}
	q, err := client.QueueGet(ctx, queue)
	if err != nil {
		return fmt.Errorf("heedriver: pausing queue %q: %w", queue, err)
	}
	if q.PausedAt != nil {
		return nil
	}
	_, err = client.Insert(ctx, ResumeArgs{Queue: queue}, &river.InsertOpts{
		Queue:       m.cfg.resumeQueue,
		ScheduledAt: at,
	})
	if err != nil {
		return fmt.Errorf("heedriver: scheduling the resumption of queue %q: %w", queue, err)
	}
	if err := client.QueuePause(ctx, queue, nil); err != nil {
		return fmt.Errorf("heedriver: pausing queue %q: %w", queue, err)
	}
	return nil
}
