// Middleware: the idempotency key each task's requests are derived from.

package heedasynq

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/heed-go/heed"
	"github.com/hibiken/asynq"
)

// Middleware returns a handler that runs h under
// heed.WithIdempotencyKey(ctx, key), where key is made of the task's queue,
// type and ID and a SHA-256 of its payload. All four stay the same when
// asynq retries the task, runs it again after a deferral or recovers it
// from a crashed worker, so each write the handler sends through a heed
// Transport whose Policy names a KeyHeader (and that carries no key of its
// own) gets the key it had on the earlier run, and a create that landed
// before is not applied twice. A task ID you choose (asynq.TaskID) names
// the work: a task enqueued again under it, once the first is gone, with
// the same type and payload is the same work and gets the same keys; with
// another payload or type it gets others. Outside an asynq server, where
// the context carries no task ID, h runs under ctx unchanged. Its type fits
// asynq.MiddlewareFunc: mux.Use(heedasynq.Middleware). Safe for concurrent
// use.
func Middleware(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		id, ok := asynq.GetTaskID(ctx)
		if !ok {
			return h.ProcessTask(ctx, t)
		}
		return h.ProcessTask(heed.WithIdempotencyKey(ctx, taskKey(ctx, t, id)), t)
	})
}

// taskKey returns the base of the keys of task t, whose ID is id: a
// SHA-256 of its queue, type and ID, each prefixed by its length so that no
// two tasks' fields run together alike, and of its payload.
func taskKey(ctx context.Context, t *asynq.Task, id string) string {
	queue, _ := asynq.GetQueueName(ctx)
	h := sha256.New()
	for _, f := range []string{queue, t.Type(), id} {
		h.Write(binary.AppendUvarint(nil, uint64(len(f))))
		h.Write([]byte(f))
	}
	h.Write(t.Payload())
	return "asynq:" + hex.EncodeToString(h.Sum(nil))
}
