package jobpoll_test

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
)

// TestHTTPCheckerMaxBody asserts that a 2xx status body over MaxBody is a
// *BodyTooLargeError, reachable with errors.As through the *CheckError,
// while a larger error body keeps its status as an *HTTPError.
func TestHTTPCheckerMaxBody(t *testing.T) {
	long := `{"status":"running","pad":"` + strings.Repeat("x", 100) + `"}`
	for _, tt := range []struct {
		name    string
		answer  answer
		maxBody int64
		check   func(t *testing.T, err error)
	}{
		{"at the limit", answer{body: `{"status":"succeeded"}`}, int64(len(`{"status":"succeeded"}`)), func(t *testing.T, err error) {
			require.NoError(t, err)
		}},
		{"one byte over", answer{body: `{"status":"succeeded"}`}, int64(len(`{"status":"succeeded"}`)) - 1, func(t *testing.T, err error) {
			var be *jobpoll.BodyTooLargeError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, int64(21), be.Limit)
			assert.EqualError(t, be, "jobpoll: status body larger than 21 bytes")
			var ce *jobpoll.CheckError
			require.ErrorAs(t, err, &ce)
		}},
		{"the default, 1 MiB", answer{body: `{"status":"running","pad":"` + strings.Repeat("x", jobpoll.DefaultMaxBody) + `"}`}, 0, func(t *testing.T, err error) {
			var be *jobpoll.BodyTooLargeError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, int64(jobpoll.DefaultMaxBody), be.Limit)
		}},
		{"an error body over the limit stays an HTTPError", answer{status: 404, body: long}, 10, func(t *testing.T, err error) {
			var he *jobpoll.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, 404, he.StatusCode)
			assert.Equal(t, long[:10], string(he.Body), "the first MaxBody bytes")
			assert.NotErrorAs(t, err, new(*jobpoll.BodyTooLargeError))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := checker(scripted(tt.answer), heed.Policy{MaxAttempts: 1})
				c.MaxBody = tt.maxBody
				p := jobpoll.Poller{Terminal: terminal}
				_, err := p.Poll(t.Context(), "job-1", c)
				tt.check(t, err)
			})
		})
	}
}
