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
//     the job's kind, ID and creation time, so every POST or PATCH the job
//     sends carries the same Idempotency-Key on every attempt, snooze and
//     redelivery of that job, and a different one in any other job;
//   - turns an error wrapping *heed.DeferredError into river.JobSnooze until
//     RetryAt, rounded up, so no worker picks the job up before RetryAt and
//     the snooze costs no attempt;
//   - with WithCancelTerminal, turns a *TerminalError (see Terminal) into
//     river.JobCancel, so a failure no retry fixes is not retried;
//   - with WithPauseQueue, pauses the job's queue until RetryAt, resumed by a
//     ResumeArgs job stored in the database, so a crash cannot leave the
//     queue paused.
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
