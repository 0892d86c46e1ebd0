// Package heedasynq runs heed's deferrals on asynq: a task whose HTTP call
// heed defers (a *heed.DeferredError, the server's wait not fitting the
// task's time) goes back to asynq until the RetryAt the error carries,
// without using up one of the task's retries, and runs again with the same
// idempotency keys on its POSTs.
//
//	cfg := asynq.Config{Concurrency: 10}
//	heedasynq.Configure(&cfg)       // before asynq.NewServer
//	mux := asynq.NewServeMux()
//	mux.Use(heedasynq.Middleware)   // stable keys for every task
//
// The handler returns the error its HTTP call gave, wrapped or not.
//
// # When the task runs again
//
// For an error wrapping a *heed.DeferredError, the RetryDelayFunc that
// Configure installs returns the time until RetryAt, never less. asynq adds
// that delay to its clock, keeps the sum in whole Unix seconds, truncated,
// and its forwarder moves the task back to its queue once that second has
// begun (every DelayedTaskCheckInterval, 5 s by default). So the delay is
// rounded up to the first whole second at or after RetryAt: the task runs
// up to a second, plus the forwarder's and the processor's check
// intervals, after RetryAt, and never before. A RetryAt already past gives
// the smallest positive delay. Other errors get the delay of the function
// the Config held before, or asynq.DefaultRetryDelayFunc.
//
// # Why waiting uses up no attempt
//
// asynq v0.26 asks Config.IsFailure about every error a handler returns.
// When it answers false, asynq still moves the task to its retry set at the
// delay above, with the error as its last error, but does not increment
// the task's Retried count and does not count the run in the queue's
// processed or failed stats (today's or the totals). The IsFailure that
// Configure installs answers false for every error matching
// heed.ErrDeferred and asks the Config's previous IsFailure (by default:
// any error is a failure) about the rest. So a task may defer any number
// of times and keep all its MaxRetry retries for real failures.
//
// asynq decides two things before it asks IsFailure, and neither can be
// changed from the Config: an error wrapping asynq.SkipRetry archives the
// task and one wrapping asynq.RevokeTask drops it; and a task whose
// Retried count has reached its MaxRetry is archived whatever the error.
// So a deferral on the last run a task has left (the first run of a task
// enqueued with asynq.MaxRetry(0), or the run after MaxRetry real
// failures) archives it. Give tasks that call rate-limited APIs at least
// one retry. An ErrorHandler is still called for every deferral; test
// errors.Is(err, heed.ErrDeferred) there to keep them out of alerts.
//
// # The same key on every run
//
// Middleware runs each task under heed.WithIdempotencyKey with a key made
// of the task's queue and ID (asynq.GetQueueName, asynq.GetTaskID). Both
// stay the same across retries, deferrals and the recovery of a task whose
// worker crashed, so the n-th POST or PATCH of a run to one method, host
// and path gets the same Idempotency-Key on every run: a create the API
// applied before a failure is recognised when it is sent again. Two tasks
// get different keys, as do requests to different paths within a run.
//
// heedasynq is a module of its own, github.com/heed-go/heed/heedasynq, so
// that programs using heed without asynq do not download or build it.
package heedasynq
