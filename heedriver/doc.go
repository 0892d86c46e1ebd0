// Package heedriver runs heed under River (github.com/riverqueue/river), the
// job queue for Go on PostgreSQL or SQLite: a job that heed defers waits in
// the database, not in a worker.
//
//	mw := heedriver.New[pgx.Tx]() // *sql.Tx for riversqlite
//	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
//		Middleware: []rivertype.Middleware{mw},
//		Queues:     map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
//		Workers:    workers,
//	})
//
// For every job it works, the Middleware:
//
//   - puts heed.WithIdempotencyKey on the Work context, with a key made of
//     the job's kind, ID and creation time, so that each write the job
//     sends through a heed Transport that keys it carries the key it had
//     on an earlier attempt, snooze or redelivery of that job (see below),
//     and no key of any other job;
//   - turns an error wrapping *heed.DeferredError into river.JobSnooze until
//     RetryAt, rounded up, so no worker picks the job up before RetryAt and
//     the snooze costs no attempt;
//   - with WithCancelTerminal, turns a *TerminalError (see Terminal) into
//     river.JobCancel, so a failure no retry fixes is not retried;
//   - with WithPauseQueue, pauses the job's queue until RetryAt when the
//     deferral carries the server's wait, resumed by a ResumeArgs job
//     stored in the database, so a crash cannot leave the queue paused.
//
// # Which writes get a key
//
// heed adds a key only to a POST or PATCH whose Policy names a KeyHeader and
// that carries none of its own: set Policy.KeyHeader on the routes whose
// API honours idempotency keys (Stripe, and similar). Without it nothing is
// added, and an unkeyed POST stays not replay-safe. Under the job's context
// the key is derived, not random: from the job's key, the write's method,
// host, path and query, a SHA-256 of its body, and how many earlier writes
// of the same attempt had that same method, URL and body. So two different
// writes of a job never share a key, whatever their order; the same write
// sent again on a later attempt gets the key it had; a job that skips the
// writes it finds done is safe. A body heed cannot read again (streamed
// past its buffer, or sent by a one-attempt policy without GetBody) gets a
// random key.
//
// An SDK that sets its own key keeps it: stripe-go puts a random one on
// every write, so inside a job set the params' IdempotencyKey from the job
// yourself. A retry made above heed, such as an SDK's own retry loop, is a
// new request: the second identical send of an attempt is a later write
// and gets another key; turn such retries off and let heed retry.
//
// # What River does with a snooze
//
// River (v0.51) counts an attempt when it fetches a job: the fetch sets
// attempt = attempt + 1. A snooze stores the job back with attempt − 1,
// max_attempts unchanged, scheduled_at = now + the duration, no entry in
// errors, and metadata "snoozes" one higher. The next fetch counts the same
// attempt again: a job deferred and then worked sees the same JobRow.Attempt
// both times, and is never discarded for snoozing. A snooze of up to
// River's scheduler interval (5 s) stores the job available with a future
// scheduled_at, which fetches skip until then; a longer one stores it
// scheduled, and the scheduler makes it available ahead of time, again
// fetched no earlier than scheduled_at. Snoozes are not bounded: a job
// whose API defers it forever is snoozed forever, visible in "snoozes".
//
// scheduled_at is reckoned on the worker's clock and compared with the
// database's: keep them in step (NTP), as River itself requires.
package heedriver
