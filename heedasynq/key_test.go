// The idempotency key Middleware gives a task's requests: the same across
// the task's runs, different between tasks, between writes and between
// works under one reused task ID.

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
	client := heedClient(t, heed.Policy{MaxWait: 100 * time.Millisecond, KeyHeader: keyHeader})
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
	assert.Equal(t, 1, api.timesApplied(failingImages[0]), "the retried POST applied once")
	assert.Equal(t, 1, api.timesApplied(failingUploads[0]), "the retried POST applied once")
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

// TestKeysAcrossTwoWorkerProcesses: a task's POST lands at the API, and
// its worker process then fails the task and stops, as if it crashed
// before it could record the write. Another process (an asynq server and
// a heed Transport of its own, on the same Redis) runs the task again:
// its POST carries the key the first process sent.
func TestKeysAcrossTwoWorkerProcesses(t *testing.T) {
	api := newFakeAPI(t, nil)
	addr := startRedis(t)
	cfg := asynq.Config{
		// The retry waits for the first process to be gone.
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return 2 * time.Second },
	}
	errCrashed := errors.New("crashed after the call")
	ran := make(chan struct{}, 1)
	first := startServer(t, addr, cfg, func(ctx context.Context, task *asynq.Task) error {
		if err := post(ctx, heedClient(t, heed.Policy{KeyHeader: keyHeader}), api.URL+"/v1/images", "crashing"); err != nil {
			return err
		}
		ran <- struct{}{}
		return errCrashed
	})
	aq := asynq.NewClient(asynq.RedisClientOpt{Addr: addr})
	defer aq.Close()
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: addr})
	defer insp.Close()
	info, err := aq.Enqueue(asynq.NewTask("work", []byte("crashing")), asynq.Queue(queue), asynq.MaxRetry(3), asynq.Retention(time.Minute))
	require.NoError(t, err)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the first process never ran the task")
	}
	first.Shutdown()
	require.Len(t, api.requests("crashing"), 1, "the first process sent once")

	startServer(t, addr, cfg, func(ctx context.Context, task *asynq.Task) error {
		return post(ctx, heedClient(t, heed.Policy{KeyHeader: keyHeader}), api.URL+"/v1/images", "crashing")
	})
	done := taskInfo(t, insp, info.ID, 10*time.Second, asynq.TaskStateCompleted)
	assert.Equal(t, 1, done.Retried, "the crash used up an attempt")
	reqs := api.requests("crashing")
	require.Len(t, reqs, 2, "one request from each process")
	require.NotEmpty(t, reqs[0].key)
	assert.Equal(t, reqs[0].key, reqs[1].key, "the second process sends the first one's key")
	assert.Equal(t, 1, api.timesApplied(reqs[0].key), "applied once")
}

// TestReusedTaskIDKeys: a task ID of the caller's choosing (asynq.TaskID,
// enqueued again once the task before it is gone) names the work with the
// task's type and payload: the same type and payload under it get the same
// key, as a re-enqueue of the same work should, and another payload or type
// gets another, so new work whose requests are sent alike (the same POST,
// the same empty body) is not answered with the old work's reply.
func TestReusedTaskIDKeys(t *testing.T) {
	api := newFakeAPI(t, nil)
	client := heedClient(t, heed.Policy{KeyHeader: keyHeader})
	done := make(chan struct{}, 1)
	handler := func(ctx context.Context, task *asynq.Task) error {
		// The request names neither the payload nor the type.
		err := post(ctx, client, api.URL+"/v1/invoices", "invoice")
		done <- struct{}{}
		return err
	}
	aq, insp := startAsynq(t, startRedis(t), asynq.Config{}, handler)
	const id = "send-invoice:user-42"
	tasks := []struct{ typ, payload string }{
		{"send", "monday"},
		{"send", "tuesday"}, // new work under the reused ID
		{"send", "monday"},  // the first work enqueued again
		{"mail", "monday"},  // another type
	}
	for _, tk := range tasks {
		// asynq deletes a task without Retention once it is done; until
		// then the ID is taken.
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			_, err = aq.Enqueue(asynq.NewTask(tk.typ, []byte(tk.payload)), asynq.Queue(queue), asynq.TaskID(id))
			if !errors.Is(err, asynq.ErrTaskIDConflict) || time.Now().After(deadline) {
				break
			}
		}
		require.NoError(t, err)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("task %v not run", tk)
		}
	}
	_, err := insp.GetTaskInfo(queue, id)
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, err = insp.GetTaskInfo(queue, id)
	}
	require.ErrorIs(t, err, asynq.ErrTaskNotFound, "the last task is gone")

	sent := api.requests("invoice")
	require.Len(t, sent, len(tasks))
	for _, r := range sent {
		require.NotEmpty(t, r.key)
	}
	assert.NotEqual(t, sent[0].key, sent[1].key, "new work under a reused ID gets the old work's key")
	assert.Equal(t, sent[0].key, sent[2].key, "the same work enqueued again under its ID")
	assert.NotEqual(t, sent[0].key, sent[3].key, "another type under a reused ID")
}

// TestMiddlewareOutsideAServer: a context that carries no task ID is
// passed on unchanged: a handler called directly sends heed's random key
// on each call, and under a key of the caller's own, the key heed derives
// from that one, as a request sent outside the Middleware gets.
func TestMiddlewareOutsideAServer(t *testing.T) {
	api := newFakeAPI(t, nil)
	client := heedClient(t, heed.Policy{KeyHeader: keyHeader})
	h := heedasynq.Middleware(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		return post(ctx, client, api.URL+"/v1/images", "direct")
	}))
	for range 2 {
		require.NoError(t, h.ProcessTask(context.Background(), asynq.NewTask("work", nil)))
	}
	require.NoError(t, h.ProcessTask(heed.WithIdempotencyKey(context.Background(), "job-1"), asynq.NewTask("work", nil)))
	require.NoError(t, post(heed.WithIdempotencyKey(context.Background(), "job-1"), client, api.URL+"/v1/images", "direct"))

	sent := api.requests("direct")
	require.Len(t, sent, 4)
	for _, r := range sent {
		require.NotEmpty(t, r.key)
	}
	assert.NotEqual(t, sent[0].key, sent[1].key, "no task ID: heed's random key")
	assert.Equal(t, sent[3].key, sent[2].key, "the caller's key, not one of the Middleware's")
}
