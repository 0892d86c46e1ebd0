// The idempotency key Middleware gives a task's requests: the same across
// the task's runs, different between tasks and between paths.

package heedasynq_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedasynq"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeysStayWithTheTask(t *testing.T) {
	api := newFakeAPI(t, nil)
	// The deferring task's first POST is throttled past MaxWait. It goes to
	// a host of its own: heed holds a throttled host for all its requests,
	// which would defer the other tasks' POSTs too.
	throttling := newFakeAPI(t, map[string][]answer{
		"/v1/deferred": {{status: http.StatusTooManyRequests, retryAfter: "1"}},
	})
	client := heedClient(t, heed.Policy{MaxWait: 100 * time.Millisecond})
	errFlaky := errors.New("flaky downstream")
	var fallbackCalls atomic.Int32
	cfg := asynq.Config{
		// The user's own delay for failures that are not deferrals: short,
		// where asynq's default would wait 15 s or more.
		RetryDelayFunc: func(n int, e error, t *asynq.Task) time.Duration {
			fallbackCalls.Add(1)
			return 10 * time.Millisecond
		},
	}
	handler := func(ctx context.Context, task *asynq.Task) error {
		name := string(task.Payload())
		n, _ := asynq.GetRetryCount(ctx)
		switch name {
		case "deferring":
			return post(ctx, client, throttling.URL+"/v1/deferred", name)
		default: // two creates, then a failure on the first run
			if err := post(ctx, client, api.URL+"/v1/images", name); err != nil {
				return err
			}
			if err := post(ctx, client, api.URL+"/v1/uploads", name); err != nil {
				return err
			}
			if name == "failing" && n == 0 {
				return errFlaky
			}
			return nil
		}
	}
	aq, insp := startAsynq(t, startRedis(t), cfg, handler)

	ids := map[string]string{}
	for _, name := range []string{"failing", "other", "deferring"} {
		info, err := aq.Enqueue(asynq.NewTask("work", []byte(name)),
			asynq.Queue(queue), asynq.MaxRetry(3), asynq.Retention(time.Minute))
		require.NoError(t, err)
		ids[name] = info.ID
	}
	for name, id := range ids {
		info := taskInfo(t, insp, id, 8*time.Second, asynq.TaskStateCompleted)
		if name == "failing" {
			assert.Equal(t, 1, info.Retried, "a plain failure uses up an attempt")
		} else {
			assert.Equal(t, 0, info.Retried, "task %s", name)
		}
	}
	assert.Equal(t, int32(1), fallbackCalls.Load(), "the user's RetryDelayFunc, for the plain failure only")

	keys := func(task, path string) []string {
		var out []string
		for _, r := range append(api.requests(task), throttling.requests(task)...) {
			if r.path == path {
				require.NotEmpty(t, r.key, "%s's POST to %s carries no key", task, path)
				out = append(out, r.key)
			}
		}
		return out
	}
	failingImages, failingUploads := keys("failing", "/v1/images"), keys("failing", "/v1/uploads")
	require.Len(t, failingImages, 2)
	require.Len(t, failingUploads, 2)
	assert.Equal(t, failingImages[0], failingImages[1], "the retried POST's key")
	assert.Equal(t, failingUploads[0], failingUploads[1], "the retried POST's key")
	assert.NotEqual(t, failingImages[0], failingUploads[0], "two paths of one run share a key")

	deferred := keys("deferring", "/v1/deferred")
	require.Len(t, deferred, 2)
	assert.Equal(t, deferred[0], deferred[1], "the POST after the deferral's key")

	otherImages, otherUploads := keys("other", "/v1/images"), keys("other", "/v1/uploads")
	require.Len(t, otherImages, 1)
	require.Len(t, otherUploads, 1)
	assert.NotEqual(t, failingImages[0], otherImages[0], "two tasks share a key")
	assert.NotEqual(t, failingUploads[0], otherUploads[0], "two tasks share a key")
}

// TestMiddlewareOutsideAServer: a context that carries no task ID is
// passed on unchanged, so a handler called directly sends no derived key.
func TestMiddlewareOutsideAServer(t *testing.T) {
	api := newFakeAPI(t, nil)
	client := heedClient(t, heed.Policy{})
	h := heedasynq.Middleware(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		return post(ctx, client, api.URL+"/v1/images", "direct")
	}))
	require.NoError(t, h.ProcessTask(context.Background(), asynq.NewTask("work", nil)))
	sent := api.requests("direct")
	require.Len(t, sent, 1)
	assert.Empty(t, sent[0].key)

	// Under a key of the caller's own, heed derives one as usual.
	require.NoError(t, h.ProcessTask(heed.WithIdempotencyKey(context.Background(), "job-1"), asynq.NewTask("work", nil)))
	sent = api.requests("direct")
	require.Len(t, sent, 2)
	assert.NotEmpty(t, sent[1].key)
}
