package heedriver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed/heedriver"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPauseQueue: with WithPauseQueue, a job deferred by a 429 pauses its
// queue, so another job of that queue is not worked before RetryAt, and a
// ResumeArgs job resumes the queue no earlier than RetryAt: also after the
// client that paused it has stopped, by another client, as after a crash.
// Without the option, the other job is worked at once, and heed's gate
// defers it: the check below can fail.
func TestPauseQueue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		after   int
		pause   bool
		restart bool // stop the client that paused; a new one resumes
	}{
		{after: 1, pause: true},
		{after: 2, pause: true},
		{after: 1, pause: true, restart: true},
		{after: 1, pause: false},
	}
	for _, b := range backends {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/retry-after-%d/pause=%t/restart=%t", b.name, tc.after, tc.pause, tc.restart), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db := b.open(t)
				api := newFakeAPI(t, throttleFirst(tc.after))
				setup := clientSetup{api: api, policy: deferringPolicy}
				if tc.pause {
					setup.options = []heedriver.Option{heedriver.WithPauseQueue(river.QueueDefault)}
				}
				client, rec := startClient(t, db, setup)
				events, unsubscribe := client.Subscribe(river.EventKindQueuePaused)
				defer unsubscribe()

				a := insert(t, client, "/v1/a")
				require.Eventually(t, func() bool {
					w := rec.of(a)
					return len(w) == 1 && !w[0].RetryAt.IsZero()
				}, 20*time.Second, 5*time.Millisecond)
				retryAt := rec.of(a)[0].RetryAt
				snoozed := func() bool {
					job, err := client.JobGet(ctx, a)
					require.NoError(t, err)
					return job.State != rivertype.JobStateRunning
				}
				require.Eventually(t, snoozed, 20*time.Second, 5*time.Millisecond)

				queue, err := client.QueueGet(ctx, apiQueue)
				require.NoError(t, err)
				assert.Equal(t, tc.pause, queue.PausedAt != nil, "queue paused")
				if tc.pause {
					// The producer stops fetching when River tells it.
					select {
					case ev := <-events:
						assert.Equal(t, apiQueue, ev.Queue.Name)
					case <-time.After(10 * time.Second):
						t.Fatal("no client was told of the pause")
					}
				}
				require.True(t, time.Now().Before(retryAt), "too slow to test: RetryAt passed")

				others := rec
				if tc.restart {
					// As if the process died: a new client, a new heed.
					ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
					require.NoError(t, client.Stop(ctx))
					cancel()
					client, others = startClient(t, db, setup)
				}
				bID := insert(t, client, "/v1/b")
				waitJob(t, client, bID, rivertype.JobStateCompleted, 20*time.Second)
				waitJob(t, client, a, rivertype.JobStateCompleted, 20*time.Second)

				bWorks := others.of(bID)
				require.NotEmpty(t, bWorks)
				if !tc.pause {
					assert.True(t, bWorks[0].At.Before(retryAt), "without a pause, b waits for nothing")
					assert.True(t, bWorks[0].Gate, "without a pause, heed's gate defers b")
					return
				}
				assert.Len(t, bWorks, 1, "b was worked once, after the pause")
				assert.False(t, bWorks[0].At.Before(retryAt), "b was worked %s before RetryAt", retryAt.Sub(bWorks[0].At))
				for _, r := range api.requests("")[1:] {
					assert.False(t, r.At.Before(retryAt), "the API was called %s before RetryAt", retryAt.Sub(r.At))
				}

				queue, err = client.QueueGet(ctx, apiQueue)
				require.NoError(t, err)
				assert.Nil(t, queue.PausedAt, "queue resumed")

				resumes, err := client.JobList(ctx, river.NewJobListParams().Kinds(heedriver.ResumeArgs{}.Kind()).States(rivertype.JobStateCompleted))
				require.NoError(t, err)
				require.Len(t, resumes.Jobs, 1)
				resume := resumes.Jobs[0]
				assert.Equal(t, river.QueueDefault, resume.Queue)
				assert.JSONEq(t, `{"queue":"api"}`, string(resume.EncodedArgs))
				assert.False(t, resume.ScheduledAt.Before(retryAt), "resumption scheduled before RetryAt")
				require.NotNil(t, resume.FinalizedAt)
				assert.False(t, resume.FinalizedAt.Before(retryAt), "resumed before RetryAt")
			})
		}
	}
}

// TestStaleResumeLeavesQueuePaused: a ResumeArgs job that finds another of
// its queue pending and scheduled later leaves the queue paused (a pause
// that ended and was followed by a longer one), and the later one resumes
// it at its time.
func TestStaleResumeLeavesQueuePaused(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.open(t)
			client, _ := startClient(t, db, clientSetup{api: newFakeAPI(t, throttleFirst(1)), policy: deferringPolicy,
				options: []heedriver.Option{heedriver.WithPauseQueue(river.QueueDefault)}})
			require.Eventually(t, func() bool { return client.QueuePause(ctx, apiQueue, nil) == nil }, 10*time.Second, 10*time.Millisecond)

			resumeAt := func(at time.Time) int64 {
				res, err := client.Insert(ctx, heedriver.ResumeArgs{Queue: apiQueue}, &river.InsertOpts{Queue: river.QueueDefault, ScheduledAt: at})
				require.NoError(t, err)
				return res.Job.ID
			}
			now := time.Now()
			stale, later := resumeAt(now.Add(300*time.Millisecond)), resumeAt(now.Add(1500*time.Millisecond))
			// Another queue's later resumption does not hold this one.
			other, err := client.Insert(ctx, heedriver.ResumeArgs{Queue: "elsewhere"}, &river.InsertOpts{Queue: river.QueueDefault, ScheduledAt: now.Add(time.Hour)})
			require.NoError(t, err)

			waitJob(t, client, stale, rivertype.JobStateCompleted, 20*time.Second)
			queue, err := client.QueueGet(ctx, apiQueue)
			require.NoError(t, err)
			require.True(t, time.Now().Before(now.Add(1500*time.Millisecond)), "too slow to test: the later resumption is due")
			assert.NotNil(t, queue.PausedAt, "the stale resumption resumed the queue")

			done := waitJob(t, client, later, rivertype.JobStateCompleted, 20*time.Second)
			require.NotNil(t, done.FinalizedAt)
			assert.False(t, done.FinalizedAt.Before(now.Add(1500*time.Millisecond)), "resumed before its time")
			queue, err = client.QueueGet(ctx, apiQueue)
			require.NoError(t, err)
			assert.Nil(t, queue.PausedAt, "the later resumption left the queue paused")

			pending, err := client.JobGet(ctx, other.Job.ID)
			require.NoError(t, err)
			assert.Equal(t, rivertype.JobStateAvailable, pending.State, "the other queue's resumption waits")
		})
	}
}

// TestBackoffDeferralDoesNotPause: a deferral whose wait is heed's backoff
// after a 500, not the server's, snoozes the job but leaves its queue
// running and stores no resumption.
func TestBackoffDeferralDoesNotPause(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.open(t)
			api := newFakeAPI(t, func(n int) answer {
				if n == 0 {
					return answer{status: http.StatusInternalServerError}
				}
				return answer{apply: true}
			})
			// Keyed, so the 500 may be resent: its backoff (500 ms or more)
			// is over MaxWait and defers.
			client, rec := startClient(t, db, clientSetup{api: api, policy: deferringPolicy,
				options: []heedriver.Option{heedriver.WithPauseQueue(river.QueueDefault)}})
			id := insert(t, client, "/v1/a")
			waitJob(t, client, id, rivertype.JobStateCompleted, 20*time.Second)
			works := rec.of(id)
			require.Len(t, works, 2)
			require.False(t, works[0].RetryAt.IsZero(), "the 500 was not deferred")

			queue, err := client.QueueGet(ctx, apiQueue)
			require.NoError(t, err)
			assert.Nil(t, queue.PausedAt, "a backoff paused the queue")
			resumes, err := client.JobList(ctx, river.NewJobListParams().Kinds(heedriver.ResumeArgs{}.Kind()))
			require.NoError(t, err)
			assert.Empty(t, resumes.Jobs, "a resumption stored for a backoff")
		})
	}
}
