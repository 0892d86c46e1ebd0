package main

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPollCommand runs the built binary against local job-status servers.
func TestPollCommand(t *testing.T) {
	bin := buildHeed(t)
	states := []string{"--state-field", "status", "--terminal", "succeeded,failed,canceled"}
	poll := func(t *testing.T, url string, extra ...string) result {
		return runHeed(t, bin, append(append([]string{"poll"}, states...), append(extra, url)...)...)
	}

	t.Run("succeeded: exit 0, body on stdout", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, `{"id":"job-1","status":"succeeded","output":"s3://bucket/out.png"}`))
		r := poll(t, srv.URL+"/v1/jobs/job-1", "--success", "succeeded")
		assert.Equal(t, 0, r.code)
		assert.Equal(t, `{"id":"job-1","status":"succeeded","output":"s3://bucket/out.png"}`, r.stdout)
		assert.Len(t, srv.received(), 1)
		assert.Contains(t, r.stderr, "poll done")
	})

	t.Run("failed after one check: exit 1", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, `{"id":"job-2","status":"failed","error":"out of memory"}`))
		r := poll(t, srv.URL+"/v1/jobs/job-2")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stdout, `"error":"out of memory"`)
		assert.Len(t, srv.received(), 1, "one check")
		assert.Contains(t, r.stderr, "ended in failed, not a success")
	})

	t.Run("pending, then succeeded, with backoff", func(t *testing.T) {
		srv := newScriptServer(t,
			reply(200, `{"status":"pending"}`),
			reply(200, `{"status":"pending"}`),
			reply(200, `{"status":"Succeeded"}`))
		r := poll(t, srv.URL+"/v1/jobs/job-3", "--interval", "20ms", "--max-interval", "40ms", "--running", "pending")
		assert.Equal(t, 0, r.code, "states match case-insensitively")
		got := srv.received()
		require.Len(t, got, 3)
		assert.GreaterOrEqual(t, got[1].at.Sub(got[0].at), 10*time.Millisecond, "equal jitter: at least half of --interval")
		assert.Equal(t, 2, strings.Count(r.stderr, `"op": "poll wait"`))
	})

	t.Run("a hint past the deadline: exit 75 at once with retry-at", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, `{"status":"running"}`, "Retry-After", "600"))
		r := poll(t, srv.URL+"/v1/jobs/job-4", "--deadline", "5s")
		assert.Equal(t, 75, r.code)
		assert.Less(t, r.took, time.Second)
		require.True(t, strings.HasPrefix(r.stdout, "retry-at "), "stdout: %q", r.stdout)
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(strings.TrimPrefix(r.stdout, "retry-at ")))
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now().Add(600*time.Second), at, 5*time.Second)
		assert.Contains(t, r.stderr, `still "running"`)
		assert.Len(t, srv.received(), 1)
	})

	t.Run("the status endpoint defers: exit 75 with its retry-at", func(t *testing.T) {
		srv := newScriptServer(t, reply(429, "slow down", "Retry-After", "300"))
		r := poll(t, srv.URL+"/v1/jobs/job-5", "--check-deadline", "10s")
		assert.Equal(t, 75, r.code)
		assert.Less(t, r.took, time.Second)
		assert.True(t, strings.HasPrefix(r.stdout, "retry-at "), "stdout: %q", r.stdout)
		assert.Contains(t, r.stderr, "status check was deferred")
	})

	t.Run("an unknown state: exit 65", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, `{"status":"exploded"}`))
		r := poll(t, srv.URL+"/v1/jobs/job-6", "--running", "pending,running")
		assert.Equal(t, 65, r.code)
		assert.Contains(t, r.stderr, `unknown state "exploded"`)
	})

	t.Run("a nested state field", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, `{"properties":{"status":"Canceled"}}`))
		r := runHeed(t, bin, "poll", "--state-field", "properties.status", "--terminal", "Succeeded,Failed,Canceled", srv.URL+"/op")
		assert.Equal(t, 1, r.code, "canceled is terminal but not the success state")
	})

	t.Run("no state in the body: exit 65", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, `{"state":"running"}`))
		r := poll(t, srv.URL+"/v1/jobs/job-7")
		assert.Equal(t, 65, r.code)
		assert.Contains(t, r.stderr, "field status: missing")
	})

	t.Run("the status endpoint answers 404: exit 22", func(t *testing.T) {
		srv := newScriptServer(t, reply(404, `{"error":"no such job"}`))
		r := poll(t, srv.URL+"/v1/jobs/job-8")
		assert.Equal(t, 22, r.code)
		assert.Contains(t, r.stderr, "HTTP 404")
		assert.Contains(t, r.stderr, "no such job")
	})

	t.Run("a 100 MB status body: exit 65 without reading it all", func(t *testing.T) {
		const size = 100 << 20
		sent := make(chan int64, 1)
		srv := newScriptServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(size))
			chunk := []byte(`{"status":"running","pad":"` + strings.Repeat("x", 64<<10))
			var n int64
			for n < size {
				m, err := w.Write(chunk[:min(int64(len(chunk)), size-n)])
				n += int64(m)
				if err != nil {
					break
				}
				chunk = bytes.Repeat([]byte("x"), 64<<10)
			}
			sent <- n
		})
		r := poll(t, srv.URL+"/v1/jobs/job-10", "--deadline", "30s")
		assert.Equal(t, 65, r.code, "the body is the data error, not the endpoint unreachable")
		assert.Less(t, r.took, 10*time.Second)
		assert.Contains(t, r.stderr, "status body larger than 1048576 bytes")
		assert.Empty(t, r.stdout)
		select {
		case n := <-sent:
			assert.Less(t, n, int64(size), "heed poll stopped reading")
		case <-time.After(10 * time.Second):
			t.Fatal("the server is still sending")
		}
	})

	t.Run("headers are sent with every check", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, `{"status":"succeeded"}`))
		r := poll(t, srv.URL+"/v1/jobs/job-9", "-H", "Authorization: Bearer sk_test")
		assert.Equal(t, 0, r.code)
		assert.Equal(t, "Bearer sk_test", srv.received()[0].header.Get("Authorization"))
	})
}

// TestPollUsage runs "heed poll" in process with bad arguments: exit 2 and
// a reason, before any request.
func TestPollUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no terminal", []string{"poll", "http://a.example/job"}, "--terminal is required"},
		{"success not terminal", []string{"poll", "--terminal", "done,error", "--success", "ok", "http://a.example/job"}, `--success state "ok" is not among --terminal`},
		{"bad field", []string{"poll", "--terminal", "done", "--state-field", "a..b", "http://a.example/job"}, "--state-field"},
		{"no URL", []string{"poll", "--terminal", "done"}, "want one URL"},
		{"bad interval", []string{"poll", "--terminal", "done", "--interval", "0s", "http://a.example/job"}, "--interval"},
		{"help", []string{"poll", "-h"}, "usage: heed poll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			want := 2
			if tc.name == "help" {
				want = 0 // asked for, help is no error
			}
			assert.Equal(t, want, run(tc.args, &stdout, &stderr))
			assert.Empty(t, stdout.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}
