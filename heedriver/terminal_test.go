package heedriver_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed/heedriver"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCancelTerminal: with WithCancelTerminal, a job whose API answers 400
// or 404 is cancelled after one attempt; without it, River retries it as
// any failure and discards it when its attempts are spent.
func TestCancelTerminal(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		for _, status := range []int{http.StatusBadRequest, http.StatusNotFound} {
			for _, cancel := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%d/cancel=%t", b.name, status, cancel), func(t *testing.T) {
					t.Parallel()
					db := b.open(t)
					api := newFakeAPI(t, func(int) answer { return answer{status: status} })
					client, rec := startClient(t, db, clientSetup{
						api:         api,
						policy:      deferringPolicy,
						options:     []heedriver.Option{heedriver.WithCancelTerminal(cancel)},
						maxAttempts: 2,
					})

					id := insert(t, client, "/v1/missing")
					want, attempts := rivertype.JobStateCancelled, 1
					if !cancel {
						want, attempts = rivertype.JobStateDiscarded, 2
					}
					job := waitJob(t, client, id, want, 20*time.Second)

					assert.Equal(t, attempts, job.Attempt)
					assert.Len(t, rec.of(id), attempts)
					assert.Len(t, api.requests(""), attempts)
					require.Len(t, job.Errors, attempts)
					for _, e := range job.Errors {
						assert.Contains(t, e.Error, fmt.Sprintf("terminal: %s (status %d)", heedReason(status), status))
					}
				})
			}
		}
	}
}

// heedReason is heed.DefaultClassifier's reason for status.
func heedReason(status int) string {
	if status == http.StatusNotFound {
		return "not found"
	}
	return "client error"
}
