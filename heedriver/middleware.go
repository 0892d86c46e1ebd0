// The Middleware: what heedriver does around every job River works.

package heedriver

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/heed-go/heed"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Middleware is a River worker middleware that runs every job under a key
// its writes' idempotency keys are derived from and turns heed's deferrals
// into snoozes; see the package documentation. TTx is the client's transaction type (pgx.Tx for
// riverpgxv5, *sql.Tx for riversqlite), needed only to find the client in
// Work's context when WithPauseQueue is set.
//
// Install it in river.Config.Middleware: it is also the insert middleware
// that stores ResumeArgs jobs ready to fetch at their time. A Middleware is
// safe for concurrent use and for several clients.
type Middleware[TTx any] struct {
	river.MiddlewareDefaults
	cfg config
}

var (
	_ rivertype.WorkerMiddleware    = (*Middleware[any])(nil)
	_ rivertype.JobInsertMiddleware = (*Middleware[any])(nil)
)

// New returns a Middleware configured by opts. By default it keys and
// snoozes; WithCancelTerminal and WithPauseQueue add more.
func New[TTx any](opts ...Option) *Middleware[TTx] {
	m := &Middleware[TTx]{}
	for _, o := range opts {
		o.apply(&m.cfg)
	}
	return m
}

// Work works job under heed.WithIdempotencyKey with the job's key, then
// maps the error doInner returns:
//
//   - a river.JobSnooze or river.JobCancel error, as it is;
//   - with WithCancelTerminal, one wrapping a *TerminalError, to
//     river.JobCancel(err): cancelled, however many attempts are left;
//   - one wrapping a *heed.DeferredError, to river.JobSnooze until its
//     RetryAt, joined with the error so that outer middleware still sees
//     the deferral; with WithPauseQueue and a deferral that carries the
//     server's wait (see WithPauseQueue), the job's queue is paused first, and
//     a failure to pause it is joined too (the job snoozes anyway);
//   - any other, as it is: River's retry policy applies.
func (m *Middleware[TTx]) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	err := doInner(heed.WithIdempotencyKey(ctx, jobKey(job)))
	if err == nil {
		return nil
	}
	var (
		snooze *rivertype.JobSnoozeError
		cancel *rivertype.JobCancelError
		term   *TerminalError
		de     *heed.DeferredError
	)
	switch {
	case errors.As(err, &snooze), errors.As(err, &cancel):
		return err
	case m.cfg.cancelTerminal && errors.As(err, &term):
		return river.JobCancel(err)
	case errors.As(err, &de):
		now := time.Now()
		wait := snoozeFor(de.RetryAt, now)
		if wait > 0 && m.cfg.resumeQueue != "" && job.Queue != m.cfg.resumeQueue && serverWait(de) {
			if perr := m.pause(ctx, job.Queue, now.Add(wait)); perr != nil {
				return errors.Join(river.JobSnooze(wait), err, perr)
			}
		}
		return errors.Join(river.JobSnooze(wait), err)
	}
	return err
}

// InsertMany stores every ResumeArgs job available rather than scheduled,
// its scheduled_at kept: River fetches no job before its scheduled_at, so
// the queue resumes on the fetch after RetryAt instead of waiting for the
// scheduler's next run (every 5 s by default). River does the same for short snoozes
// and retries. Other jobs pass unchanged.
func (m *Middleware[TTx]) InsertMany(ctx context.Context, manyParams []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, p := range manyParams {
		if p.Kind == resumeKind && p.State == rivertype.JobStateScheduled && p.ScheduledAt != nil {
			p.State = rivertype.JobStateAvailable
		}
	}
	return doInner(ctx)
}

// serverWait reports whether de carries a wait the server set, the only
// deferral that pauses a queue: a hold at heed's gate ("cooling down": a
// throttle's or a spent quota's wait, set by a response to this request or
// another of its scope), or a deferral after a response that was a
// throttle (status 429 or 503, or a reason DefaultClassifier gives a
// throttle: "rate limited" for GitHub's 403 or an AWS throttling 400,
// "overloaded" for 529). A wait heed chose is no reason to stop the queue:
// a backoff after a 5xx, "pacing", "concurrency limit" or "queue full",
// even when the last response before it was a 429.
func serverWait(de *heed.DeferredError) bool {
	switch de.Reason {
	case "cooling down":
		return true
	case "pacing", "concurrency limit", "queue full":
		return false
	}
	switch {
	case de.Status == 0:
		return false
	case de.Status == http.StatusTooManyRequests, de.Status == http.StatusServiceUnavailable:
		return true
	}
	return de.Reason == "rate limited" || de.Reason == "overloaded"
}
