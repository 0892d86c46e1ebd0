// Package heedasynq runs heed's deferrals on asynq: a task whose HTTP call
// heed defers (a *heed.DeferredError, the server's wait not fitting the
// task's time) goes back to asynq until the RetryAt the error carries,
// without using up one of the task's retries, and runs again with the same
// idempotency keys on its writes.
//
//	cfg := asynq.Config{Concurrency: 10}
//	heedasynq.Configure(&cfg)       // before asynq.NewServer
//	mux := asynq.NewServeMux()
//	mux.Use(heedasynq.Middleware)   // stable keys for every task
//
// The handler sends through a heed Transport, with Policy.KeyHeader set on
// the routes whose API honours idempotency keys, and returns the error its
// HTTP call gave, wrapped or not.
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
// of the task's queue, type and ID (asynq.GetQueueName, asynq.GetTaskID)
// and a SHA-256 of its payload. All stay the same across retries,
// deferrals and the recovery of a task whose worker crashed. heed adds a
// key only to a POST or PATCH whose Policy names a KeyHeader and that
// carries none of its own: set Policy.KeyHeader on the routes whose API
// honours idempotency keys (Stripe, and similar); without it nothing is
// added and an unkeyed POST stays not replay-safe. Under the task's context
// that key is derived, not random: from the task's key, the write's
// method, host, path and query, a SHA-256 of its body, and how many
// earlier writes of the run had that same method, URL and body. So a write
// sent again on a later run carries the key it had before, and a create
// the API applied before a failure is recognised; two different writes
// never share a key, whatever their order; a handler that skips the
// writes it finds done is safe. A body heed cannot read again (streamed
// past its buffer, or sent by a one-attempt policy without GetBody) gets a
// random key.
//
// An SDK that sets its own key keeps it: stripe-go puts a random one on
// every write, so inside a task set the params' IdempotencyKey from the
// task yourself. A retry made above heed, such as an SDK's own retry loop,
// is a new request: the second identical send of a run is a later write
// and gets another key; turn such retries off and let heed retry.
//
// A task ID you choose (asynq.TaskID) names the work: a task enqueued
// again under it once the first is gone, with the same type and payload,
// is the same work and gets the same keys, so the API answers its writes
// with the first task's replies. Do not reuse an ID for new work whose
// payload is identical; put what tells the works apart (a date, a
// sequence number) in the payload or the ID.
//
// heedasynq is a module of its own, github.com/heed-go/heed/heedasynq, so
// that programs using heed without asynq do not download or build it.
package heedasynq
