package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGetCommand runs the built binary against local servers.
func TestGetCommand(t *testing.T) {
	bin := buildHeed(t)

	t.Run("429 Retry-After: 2, then 200: waits 2s and prints the body", func(t *testing.T) {
		srv := newScriptServer(t,
			reply(429, `{"error":"rate limited"}`, "Retry-After", "2"),
			reply(200, `{"id":42,"name":"report"}`, "Content-Type", "application/json"))
		r := runHeed(t, bin, "get", srv.URL+"/v1/reports/42")
		assert.Equal(t, 0, r.code)
		assert.Equal(t, `{"id":42,"name":"report"}`, r.stdout)
		got := srv.received()
		require.Len(t, got, 2)
		assert.GreaterOrEqual(t, got[1].at.Sub(got[0].at), 2*time.Second, "never less than asked")
		assert.Contains(t, r.stderr, "retry")
		assert.Contains(t, r.stderr, `"wait": "2s"`)
		assert.Contains(t, r.stderr, `"source": "Retry-After"`)
		assert.Contains(t, r.stderr, "delivered")
	})

	t.Run("Retry-After: 600 with --deadline 5s: exits 75 at once with retry-at", func(t *testing.T) {
		srv := newScriptServer(t, reply(429, "slow down", "Retry-After", "600"))
		before := time.Now()
		r := runHeed(t, bin, "get", "--deadline", "5s", srv.URL+"/v1/batches/b_42")
		assert.Equal(t, 75, r.code)
		assert.Less(t, r.took, time.Second)
		require.True(t, strings.HasPrefix(r.stdout, "retry-at "), "stdout: %q", r.stdout)
		assert.Equal(t, 1, strings.Count(r.stdout, "\n"), "one line")
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(strings.TrimPrefix(r.stdout, "retry-at ")))
		require.NoError(t, err)
		assert.False(t, at.Before(before.Add(600*time.Second).Truncate(time.Second)), "retry-at %s is earlier than asked", at)
		assert.WithinDuration(t, time.Now().Add(600*time.Second), at, 5*time.Second)
		assert.Contains(t, r.stderr, "deferred")
		assert.Contains(t, r.stderr, "try again at")
		assert.Len(t, srv.received(), 1)
	})

	t.Run("a 404 exits 22 with status and body on stderr", func(t *testing.T) {
		srv := newScriptServer(t, reply(404, `{"error":"no such job"}`))
		r := runHeed(t, bin, "get", srv.URL+"/v1/jobs/nope")
		assert.Equal(t, 22, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "HTTP 404 Not Found")
		assert.Contains(t, r.stderr, `{"error":"no such job"}`)
		assert.Len(t, srv.received(), 1, "a 404 is not retried")
	})

	t.Run("POST with headers and a file body", func(t *testing.T) {
		srv := newScriptServer(t, reply(201, "created\n"))
		file := filepath.Join(t.TempDir(), "job.json")
		require.NoError(t, os.WriteFile(file, []byte(`{"prompt":"a red fox"}`), 0o600))
		r := runHeed(t, bin, "get", "-X", "POST", "-H", "Content-Type: application/json", "-H", "Idempotency-Key: job-7",
			"-d", "@"+file, srv.URL+"/v1/jobs")
		assert.Equal(t, 0, r.code)
		assert.Equal(t, "created\n", r.stdout)
		got := srv.received()
		require.Len(t, got, 1)
		assert.Equal(t, "POST", got[0].method)
		assert.Equal(t, `{"prompt":"a red fox"}`, got[0].body)
		assert.Equal(t, "application/json", got[0].header.Get("Content-Type"))
		assert.Equal(t, "job-7", got[0].header.Get("Idempotency-Key"))
	})

	t.Run("-d alone is a form POST, and flags may follow the URL", func(t *testing.T) {
		srv := newScriptServer(t, reply(200, "ok"))
		r := runHeed(t, bin, "get", srv.URL+"/form", "-d", "a=1&b=2", "--attempts", "1")
		assert.Equal(t, 0, r.code)
		got := srv.received()
		require.Len(t, got, 1)
		assert.Equal(t, "POST", got[0].method)
		assert.Equal(t, "a=1&b=2", got[0].body)
		assert.Equal(t, "application/x-www-form-urlencoded", got[0].header.Get("Content-Type"))
	})

	t.Run("--json-log writes one JSON object per decision", func(t *testing.T) {
		srv := newScriptServer(t, reply(503, "", "Retry-After", "0"), reply(200, "fine"))
		r := runHeed(t, bin, "get", "--json-log", srv.URL+"/health")
		assert.Equal(t, 0, r.code)
		var ops []string
		sc := bufio.NewScanner(strings.NewReader(r.stderr))
		for sc.Scan() {
			var line map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "line: %s", sc.Text())
			ops = append(ops, line["op"].(string))
			if line["op"] == "retry" {
				assert.Equal(t, "1s", line["wait"], "Retry-After: 0 waits MinWait, 1s")
				assert.NotEmpty(t, line["retry_at"])
			}
		}
		assert.Equal(t, []string{"retry", "delivered"}, ops)
	})

	t.Run("a refused connection with --attempts 1 exits 1", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		l.Close()
		r := runHeed(t, bin, "get", "--attempts", "1", "http://"+addr+"/")
		assert.Equal(t, 1, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "heed get:")
	})
}

// TestGetUsage runs "heed get" in process with bad arguments: exit 2 and a
// reason, before any request.
func TestGetUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no URL", []string{"get"}, "want one URL, got 0 arguments"},
		{"two URLs", []string{"get", "http://a.example", "http://b.example"}, "got 2 arguments"},
		{"not http", []string{"get", "ftp://files.example/x"}, "want an http:// or https:// URL"},
		{"bad header", []string{"get", "-H", "NoColon", "http://a.example"}, "want 'Name: value'"},
		{"zero attempts", []string{"get", "--attempts", "0", "http://a.example"}, "--attempts must be at least 1"},
		{"unknown flag", []string{"get", "--frobnicate", "http://a.example"}, "flag provided but not defined"},
		{"help", []string{"get", "-h"}, "usage: heed get"},
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

func TestRetryAtLine(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	assert.Equal(t, "retry-at 2025-03-04T04:06:07Z", retryAtLine(at))
	assert.Equal(t, "retry-at 2025-03-04T04:06:08Z", retryAtLine(at.Add(time.Millisecond)), "rounded up, never earlier")
}

func TestHeaderFlags(t *testing.T) {
	var h headerFlags
	require.NoError(t, h.Set("Authorization: Bearer a:b"))
	require.NoError(t, h.Set("x-tag: one"))
	require.NoError(t, h.Set("X-Tag:two"))
	require.NoError(t, h.Set("Host: api.example.com"))
	assert.Equal(t, "Bearer a:b", h.header.Get("Authorization"))
	assert.Equal(t, []string{"one", "two"}, h.header.Values("X-Tag"))
	assert.Equal(t, "api.example.com", h.host)
	for _, bad := range []string{"", "NoColon", ": value", "Two Words: x", "Authorization Bearer sk-secret"} {
		var h headerFlags
		require.NoError(t, h.Set(bad), "package flag would quote the value with an error")
		require.Error(t, h.bad, "%q", bad)
		assert.NotContains(t, h.bad.Error(), "sk-secret")
	}
}
