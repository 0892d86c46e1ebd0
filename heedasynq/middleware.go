// Middleware: the idempotency key each task's requests are derived from.

package heedasynq

import (
	"context"

	"github.com/heed-go/heed"
	"github.com/hibiken/asynq"
)

// Middleware returns a handler that runs h under
// heed.WithIdempotencyKey(ctx, key), where key is made of the task's queue
// and ID. Both stay the same when asynq retries the task, runs it again
// after a deferral or recovers it from a crashed worker, so every POST and
// PATCH the handler sends through a heed Transport (and that carries no key
// of its own) gets the same Idempotency-Key each time, and a create that
// landed before is not applied twice; two tasks, or two requests of one run
// to different paths, get different keys. A task enqueued again with an
// ID of your choosing (asynq.TaskID) after the first one is gone is the
// same work and gets the same keys. Outside an asynq server, where the
// context carries no task ID, h runs under ctx unchanged. Its type fits
// asynq.MiddlewareFunc: mux.Use(heedasynq.Middleware). Safe for concurrent
// use.
func Middleware(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		id, ok := asynq.GetTaskID(ctx)
		if !ok {
			return h.ProcessTask(ctx, t)
		}
		queue, _ := asynq.GetQueueName(ctx)
		return h.ProcessTask(heed.WithIdempotencyKey(ctx, "asynq\x00"+queue+"\x00"+id), t)
	})
}
