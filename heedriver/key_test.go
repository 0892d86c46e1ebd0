package heedriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeyAcrossAttemptSnoozeAndRedelivery: a job's POST carries one
// Idempotency-Key on every attempt, snooze and redelivery, and the API,
// which applies each key once, applies it once; another job's key differs.
// Redelivery two ways: the worker fails after its call landed (after a
// snooze), or the API applied the POST and the response was lost.
func TestKeyAcrossAttemptSnoozeAndRedelivery(t *testing.T) {
	t.Parallel()
	lostPolicy := heed.Policy{MaxAttempts: 1, KeyHeader: keyHeader} // the lost response goes back to the worker
	cases := []struct {
		name          string
		script        func(n int) answer
		policy        heed.Policy
		failAfterCall bool
		requests      int    // per key
		err           string // the one error River recorded
	}{
		{"snooze then fail after the call", throttleOnce(1), deferringPolicy, true, 3, "lost after the call"},
		{"response lost", func(int) answer { return answer{apply: true, drop: true} }, lostPolicy, false, 2, "EOF"},
	}
	for _, b := range backends {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				db := b.open(t)
				api := newFakeAPI(t, tc.script)
				client, _ := startClient(t, db, clientSetup{api: api, policy: tc.policy, maxAttempts: 5, failAfterCall: tc.failAfterCall})

				ids := []int64{insert(t, client, "/v1/a"), insert(t, client, "/v1/a")}
				for _, id := range ids {
					job := waitJob(t, client, id, rivertype.JobStateCompleted, 20*time.Second)
					assert.Equal(t, 2, job.Attempt, "one attempt for the redelivery, none for snoozes")
					require.Len(t, job.Errors, 1)
					assert.Contains(t, job.Errors[0].Error, tc.err)
				}
				byKey := map[string]int{}
				for _, r := range api.requests("/v1/a") {
					require.NotEmpty(t, r.Key)
					byKey[r.Key]++
				}
				require.Len(t, byKey, 2, "two jobs, two keys")
				for key, n := range byKey {
					assert.Equal(t, tc.requests, n, "every request of a job carries its one key")
					assert.Equal(t, 1, api.timesApplied(key), "applied once")
				}
			})
		}
	}
}

// TestKeyAcrossTwoWorkerProcesses: a job's POST lands at the API and its
// answer is lost; the worker process then stops, as if it crashed, and
// another process (a River client and a heed Transport of its own, on the
// same database) works the job again. Its POST carries the key the first
// process sent, and the API, which applies each key once, applies the
// write once.
func TestKeyAcrossTwoWorkerProcesses(t *testing.T) {
	t.Parallel()
	policy := heed.Policy{MaxAttempts: 1, KeyHeader: keyHeader} // the lost answer goes back to the worker
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.open(t)
			api := newFakeAPI(t, func(n int) answer {
				return answer{apply: true, drop: n == 0} // the first lands, its answer lost
			})
			first, _ := startClient(t, db, clientSetup{api: api, policy: policy, retryIn: 2 * time.Second})
			id := insert(t, first, "/v1/a")
			require.Eventually(t, func() bool {
				job, err := first.JobGet(context.Background(), id)
				require.NoError(t, err)
				return len(job.Errors) == 1
			}, 20*time.Second, 10*time.Millisecond, "the lost answer is the job's error")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			require.NoError(t, first.Stop(ctx), "the first process stops before the retry")
			require.Len(t, api.requests("/v1/a"), 1)

			second, _ := startClient(t, db, clientSetup{api: api, policy: policy})
			job := waitJob(t, second, id, rivertype.JobStateCompleted, 20*time.Second)
			assert.Equal(t, 2, job.Attempt)
			reqs := api.requests("/v1/a")
			require.Len(t, reqs, 2, "one request from each process")
			require.NotEmpty(t, reqs[0].Key)
			assert.Equal(t, reqs[0].Key, reqs[1].Key, "the second process sends the first one's key")
			assert.Equal(t, 1, api.timesApplied(reqs[0].Key), "applied once")
		})
	}
}
