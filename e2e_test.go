package heed_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// newLoopbackServer starts an httptest server on 127.0.0.1, closed with t.
func newLoopbackServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// fast is a policy for real servers: millisecond hints are honoured exactly.
var fast = heed.Policy{MinWait: 10 * time.Millisecond, Backoff: heed.Constant(10 * time.Millisecond)}

func TestEndToEndHintHonoured(t *testing.T) {
	var mu sync.Mutex
	var arrivals []time.Time
	srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		n := len(arrivals)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("retry-after-ms", "150")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "done")
	}))
	c := &http.Client{Transport: heed.New(srv.Client().Transport, heed.WithPolicy(fast))}
	resp, err := c.Get(srv.URL + "/v1/thing")
	require.NoError(t, err)
	assert.Equal(t, "done", readBody(t, resp))
	require.Len(t, arrivals, 2)
	assert.GreaterOrEqual(t, arrivals[1].Sub(arrivals[0]), 150*time.Millisecond, "never before the hint")
}

func TestEndToEndDeferIsImmediate(t *testing.T) {
	var hits atomic.Int32
	srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	c := &http.Client{Transport: heed.New(srv.Client().Transport)}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	req := newRequest(t, ctx, "GET", srv.URL, nil)
	start := time.Now()
	_, err := c.Do(req)
	took := time.Since(start)
	var de *heed.DeferredError
	require.ErrorAs(t, err, &de)
	assert.Less(t, took, 500*time.Millisecond, "defers at once")
	assert.Equal(t, int32(1), hits.Load())
	assert.WithinDuration(t, start.Add(120*time.Second), de.RetryAt, time.Second)
}

// lostResponseServer applies each POST, then drops the connection unanswered.
func lostResponseServer(t *testing.T, applied *atomic.Int32) *httptest.Server {
	seen := sync.Map{}
	return newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		if _, dup := seen.LoadOrStore(key, true); key == "" || !dup {
			applied.Add(1)
		}
		if key != "" && applied.Load() > 0 {
			if v, _ := seen.Load(key + "/answered"); v == nil {
				seen.Store(key+"/answered", true)
			} else {
				_, _ = io.WriteString(w, "applied")
				return
			}
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
}

func TestEndToEndLostPost(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		attempts int32
		ok       bool
	}{
		{"without key: sent once, error delivered", "", 1, false},
		{"with key: resent, applied once", "order-7", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var applied atomic.Int32
			var arrivals atomic.Int32
			srv := lostResponseServer(t, &applied)
			inner := srv.Client().Transport
			counting := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				arrivals.Add(1)
				return inner.RoundTrip(r)
			})
			c := &http.Client{Transport: heed.New(counting, heed.WithPolicy(fast))}
			req := newRequest(t, t.Context(), "POST", srv.URL+"/v1/orders", bytes.NewReader([]byte(`{"qty":1}`)))
			if tt.key != "" {
				req.Header.Set("Idempotency-Key", tt.key)
			}
			resp, err := c.Do(req)
			if tt.ok {
				require.NoError(t, err)
				assert.Equal(t, "applied", readBody(t, resp))
				assert.Equal(t, int32(2), arrivals.Load())
			} else {
				require.Error(t, err)
				assert.False(t, errors.Is(err, heed.ErrDeferred))
				assert.Equal(t, int32(1), arrivals.Load())
			}
			assert.Equal(t, tt.attempts, applied.Load())
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestEndToEndBodiesReplayIntact(t *testing.T) {
	payload := bytes.Repeat([]byte("heed-0123456789"), 69_000) // just under the 1 MiB buffer bound
	want := sha256.Sum256(payload)
	file := filepath.Join(t.TempDir(), "upload.bin")
	require.NoError(t, os.WriteFile(file, payload, 0o600))

	tests := []struct {
		name string
		body func(t *testing.T) io.Reader
	}{
		{"GetBody (bytes.Reader)", func(*testing.T) io.Reader { return bytes.NewReader(payload) }},
		{"os.File read in place", func(t *testing.T) io.Reader {
			f, err := os.Open(file)
			require.NoError(t, err)
			return f
		}},
		{"plain reader, buffered", func(*testing.T) io.Reader { return io.LimitReader(bytes.NewReader(payload), int64(len(payload))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var sums [][32]byte
			srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				sums = append(sums, sha256.Sum256(b))
				n := len(sums)
				mu.Unlock()
				if n < 3 {
					w.Header().Set("retry-after-ms", "20")
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusCreated)
			}))
			c := &http.Client{Transport: heed.New(srv.Client().Transport, heed.WithPolicy(fast))}
			resp, err := c.Post(srv.URL+"/upload", "application/octet-stream", tt.body(t))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			require.Len(t, sums, 3)
			for i, s := range sums {
				assert.Equal(t, want, s, "attempt %d", i+1)
			}
		})
	}
}

func TestEndToEndConnectionReuse(t *testing.T) {
	var conns atomic.Int32
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%2 == 1 {
			w.Header().Set("retry-after-ms", "10")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(bytes.Repeat([]byte("e"), 8<<10)) // a discarded error body
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := &http.Client{Transport: heed.New(srv.Client().Transport, heed.WithPolicy(fast))}
	for range 10 {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		assert.Equal(t, "ok", readBody(t, resp))
	}
	assert.Equal(t, int32(20), n.Load())
	assert.Equal(t, int32(1), conns.Load(), "discarded responses are drained so the connection is reused")
}
