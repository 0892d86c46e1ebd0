package heedriver_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnoozeUntilRetryAt: a job deferred by a 429 is worked again no
// earlier than RetryAt, and the snooze costs no attempt: River stores it
// with attempt − 1, so the next fetch sees the same Attempt, MaxAttempts
// unchanged, no error recorded, metadata "snoozes" 1.
func TestSnoozeUntilRetryAt(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		for _, after := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/retry-after-%d", b.name, after), func(t *testing.T) {
				t.Parallel()
				db := b.open(t)
				api := newFakeAPI(t, throttleOnce(after))
				client, rec := startClient(t, db, clientSetup{api: api, policy: deferringPolicy})

				id := insert(t, client, "/v1/things")
				job := waitJob(t, client, id, rivertype.JobStateCompleted, 20*time.Second)

				works := rec.of(id)
				require.Len(t, works, 2)
				first, second := works[0], works[1]
				require.False(t, first.RetryAt.IsZero(), "the first work was not deferred")
				assert.False(t, first.Gate, "the first work was deferred before sending")

				reqs := api.requests("")
				require.Len(t, reqs, 2)
				assert.GreaterOrEqual(t, first.RetryAt.Sub(reqs[0].At), time.Duration(after)*time.Second,
					"RetryAt is not the server's Retry-After")
				assert.False(t, reqs[1].At.Before(first.RetryAt), "the API was called again %s before RetryAt", first.RetryAt.Sub(reqs[1].At))
				assert.False(t, second.At.Before(first.RetryAt), "the job was worked again %s before RetryAt", first.RetryAt.Sub(second.At))

				// The snooze did not use up an attempt.
				assert.Equal(t, 1, first.Attempt)
				assert.Equal(t, 1, second.Attempt)
				assert.Equal(t, 3, first.MaxAttempts)
				assert.Equal(t, 3, second.MaxAttempts)
				assert.Equal(t, int64(0), first.Snoozes)
				assert.Equal(t, int64(1), second.Snoozes)
				assert.Equal(t, 1, job.Attempt)
				assert.Equal(t, 3, job.MaxAttempts)
				assert.Empty(t, job.Errors)
				assert.Equal(t, int64(1), snoozes(t, job))

				// Both POSTs carried the job's key; the API applied it once.
				require.NotEmpty(t, reqs[0].Key)
				assert.Equal(t, reqs[0].Key, reqs[1].Key)
				assert.Equal(t, 1, api.timesApplied(reqs[0].Key))
			})
		}
	}
}

// TestSnoozeOfOtherErrors: an error that is no deferral is an ordinary
// failure: River counts the attempt and retries it.
func TestSnoozeOfOtherErrors(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.open(t)
			api := newFakeAPI(t, func(n int) answer {
				if n == 0 {
					return answer{status: http.StatusInternalServerError}
				}
				return answer{apply: true}
			})
			// One attempt per RoundTrip: heed hands the 500 back, not deferred.
			client, rec := startClient(t, db, clientSetup{api: api, policy: heed.Policy{MaxAttempts: 1}})

			id := insert(t, client, "/v1/things")
			job := waitJob(t, client, id, rivertype.JobStateCompleted, 20*time.Second)

			works := rec.of(id)
			require.Len(t, works, 2)
			assert.Equal(t, 1, works[0].Attempt)
			assert.Equal(t, 2, works[1].Attempt)
			assert.Equal(t, 2, job.Attempt)
			require.Len(t, job.Errors, 1)
			assert.Contains(t, job.Errors[0].Error, "status 500")
			assert.Equal(t, int64(0), snoozes(t, job))
		})
	}
}
