// A deferral on a real asynq server: the task runs again no earlier than
// RetryAt, without using up an attempt, and then succeeds.

package heedasynq_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run is what the handler saw of one run of a task.
type run struct {
	start   time.Time
	retried int
	retryAt time.Time // the deferral's RetryAt, when the run deferred
}

// runLog records the runs of the handler.
type runLog struct {
	mu   sync.Mutex
	runs []run
}

func (l *runLog) add(r run) {
	l.mu.Lock()
	l.runs = append(l.runs, r)
	l.mu.Unlock()
}

func (l *runLog) all() []run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]run(nil), l.runs...)
}

func TestDeferralWaitsForRetryAtWithoutUsingAnAttempt(t *testing.T) {
	for _, retryAfter := range []int{1, 2} {
		t.Run("Retry-After "+strconv.Itoa(retryAfter), func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, map[string][]answer{
				"/v1/images": {{status: http.StatusTooManyRequests, retryAfter: strconv.Itoa(retryAfter)}},
			})
			client := heedClient(t, heed.Policy{MaxWait: 100 * time.Millisecond, KeyHeader: keyHeader}) // any hint defers
			var log runLog
			handler := func(ctx context.Context, task *asynq.Task) error {
				n, _ := asynq.GetRetryCount(ctx)
				r := run{start: time.Now(), retried: n}
				err := post(ctx, client, api.URL+"/v1/images", "image")
				var d *heed.DeferredError
				if errors.As(err, &d) {
					r.retryAt = d.RetryAt
				}
				log.add(r)
				if err != nil {
					return fmt.Errorf("create image: %w", err)
				}
				return nil
			}
			aq, insp := startAsynq(t, startRedis(t), asynq.Config{}, handler)

			info, err := aq.Enqueue(asynq.NewTask("image:create", nil),
				asynq.Queue(queue), asynq.MaxRetry(3), asynq.Retention(time.Minute))
			require.NoError(t, err)

			// Deferred: waiting in the retry set, no attempt used, scheduled
			// no earlier than RetryAt.
			waiting := taskInfo(t, insp, info.ID, 5*time.Second, asynq.TaskStateRetry)
			runs := log.all()
			require.Len(t, runs, 1)
			retryAt := runs[0].retryAt
			require.False(t, retryAt.IsZero(), "the first run did not defer")
			sent := api.requests("image")
			require.Len(t, sent, 1)
			assert.GreaterOrEqual(t, retryAt.Sub(sent[0].at), time.Duration(retryAfter)*time.Second,
				"RetryAt is the server's hint after the 429")
			assert.Equal(t, 0, waiting.Retried, "the deferral used up an attempt")
			assert.Contains(t, waiting.LastErr, "deferred")
			assert.False(t, waiting.NextProcessAt.Before(retryAt),
				"scheduled at %v, before RetryAt %v", waiting.NextProcessAt, retryAt)

			done := taskInfo(t, insp, info.ID, time.Duration(retryAfter+5)*time.Second, asynq.TaskStateCompleted)
			assert.Equal(t, 0, done.Retried, "the deferral used up an attempt")

			runs = log.all()
			require.Len(t, runs, 2)
			assert.False(t, runs[1].start.Before(retryAt),
				"run again at %v, before RetryAt %v", runs[1].start, retryAt)
			assert.Equal(t, 0, runs[1].retried, "asynq's retry count after the deferral")
			assert.True(t, runs[1].retryAt.IsZero(), "the second run deferred")

			sent = api.requests("image")
			require.Len(t, sent, 2)
			assert.False(t, sent[1].at.Before(retryAt),
				"the API saw the second request at %v, before RetryAt %v", sent[1].at, retryAt)
			assert.NotEmpty(t, sent[0].key)
			assert.Equal(t, sent[0].key, sent[1].key, "the retried POST carries the deferred one's key")

			stats, err := insp.GetQueueInfo(queue)
			require.NoError(t, err)
			assert.Equal(t, 0, stats.Failed, "failures today")
			assert.Equal(t, 0, stats.FailedTotal, "failures in all")
			assert.Equal(t, 1, stats.Processed, "the deferral counted as processed")
		})
	}
}

// TestDeferralOnLastRunIsArchived pins down what asynq v0.26 does before it
// consults IsFailure: a task whose Retried count has reached its MaxRetry
// is archived whatever the error, so a deferral on that run (here the only
// run of a task enqueued with MaxRetry(0)) does not wait.
func TestDeferralOnLastRunIsArchived(t *testing.T) {
	api := newFakeAPI(t, map[string][]answer{
		"/v1/images": {{status: http.StatusTooManyRequests, retryAfter: "1"}},
	})
	client := heedClient(t, heed.Policy{MaxWait: 100 * time.Millisecond})
	handler := func(ctx context.Context, task *asynq.Task) error {
		return post(ctx, client, api.URL+"/v1/images", "image")
	}
	aq, insp := startAsynq(t, startRedis(t), asynq.Config{}, handler)

	info, err := aq.Enqueue(asynq.NewTask("image:create", nil), asynq.Queue(queue), asynq.MaxRetry(0))
	require.NoError(t, err)
	archived := taskInfo(t, insp, info.ID, 5*time.Second, asynq.TaskStateArchived)
	assert.Contains(t, archived.LastErr, "deferred")
	assert.Len(t, api.requests("image"), 1)
}
