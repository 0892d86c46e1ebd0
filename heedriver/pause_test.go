package heedriver_test

import (
	"context"
	"fmt"
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
