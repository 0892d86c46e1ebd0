// Pausing a queue while heed holds its API, and the stored job that
// resumes it.

package heedriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// resumeKind is the kind of ResumeArgs jobs.
const resumeKind = "heedriver_resume"

// ResumeArgs is the job that resumes Queue, which a Middleware with
// WithPauseQueue paused when a job of it was deferred. It is inserted in
// the resume queue, scheduled at the deferral's RetryAt, before the queue
// is paused; so the resumption is stored in the database, not in a timer of
// the process that paused: if that process dies, any client working the
// resume queue resumes the queue at RetryAt. It runs no earlier than
// RetryAt, and within about one FetchPollInterval of the resume queue after
// it (the Middleware stores it ready to fetch; see InsertMany).
//
// The Middleware pauses only a queue that is not paused: one paused by an
// operator, or already for another deferral, keeps that pause and gets no
// resumption of its own. A ResumeArgs job resumes its queue whoever paused
// it since: an operator who pauses a queue heedriver paused should expect
// it to resume at RetryAt.
type ResumeArgs struct {
	Queue string `json:"queue"` // the queue to resume
}

// Kind returns "heedriver_resume", the kind ResumeWorker works.
func (ResumeArgs) Kind() string { return resumeKind }

// ResumeWorker works ResumeArgs jobs: it resumes their queue with
// Client.QueueResume. Register it on the Workers of every client that
// works the resume queue given to WithPauseQueue:
//
//	river.AddWorker(workers, &heedriver.ResumeWorker[pgx.Tx]{})
//
// A queue that no longer exists (River deletes queues no client has worked
// for a while) is nothing to resume and not an error. Safe for concurrent
// use.
type ResumeWorker[TTx any] struct {
	river.WorkerDefaults[ResumeArgs]
}

// Work resumes job.Args.Queue.
func (w *ResumeWorker[TTx]) Work(ctx context.Context, job *river.Job[ResumeArgs]) error {
	client, err := river.ClientFromContextSafely[TTx](ctx)
	if err != nil {
		return fmt.Errorf("heedriver: resuming queue %q: %w", job.Args.Queue, err)
	}
	err = client.QueueResume(ctx, job.Args.Queue, nil)
	if err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("heedriver: resuming queue %q: %w", job.Args.Queue, err)
	}
	return nil
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
