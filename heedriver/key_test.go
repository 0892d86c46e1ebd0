package heedriver_test

import (
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
