package redisgate

// Named limits in shared gates, across processes on one Redis.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// TestNamedFleetProcessReadsANewRoute: two processes (two redisgate
// gates on one Redis). B has learned one Discord route (GET /users/@me).
// A gets a 429 on GET /channels/1/pins (bucket "pins", Retry-After 30 s)
// and shares the name through Redis. B's first GET /channels/1/pins, a
// shape new to B, is held by the marks, reads the names A shared, and
// waits in the pins bucket: B sends nothing.
func TestNamedFleetProcessReadsANewRoute(t *testing.T) {
	s := startRedis(t)
	var hits sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		h := w.Header()
		h.Set("X-Ratelimit-Limit", "5")
		h.Set("X-Ratelimit-Scope", "user")
		if strings.HasSuffix(r.URL.Path, "/pins") {
			h.Set("X-Ratelimit-Bucket", "pins")
			h.Set("X-Ratelimit-Remaining", "0")
			h.Set("X-Ratelimit-Reset-After", "30.000")
			h.Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		h.Set("X-Ratelimit-Bucket", "me")
		h.Set("X-Ratelimit-Remaining", "4")
		h.Set("X-Ratelimit-Reset-After", "1.000")
	}))
	t.Cleanup(srv.Close)
	policy := heed.WithPolicy(heed.Policy{MaxAttempts: 1, MaxWait: 100 * time.Millisecond})
	a := heed.New(nil, heed.WithGate(New(s.client(t), patient)), policy)
	b := heed.New(nil, heed.WithGate(New(s.client(t), patient)), policy)
	t.Cleanup(a.CloseIdleConnections)
	t.Cleanup(b.CloseIdleConnections)
	do := func(tr *heed.Transport, path string) error {
		req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/api/v10"+path, nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, do(b, "/users/@me"))
	_ = do(a, "/channels/1/pins") // 429: bucket pins held 30 s
	require.EqualValues(t, 1, hitsOf(&hits, "/api/v10/channels/1/pins"))
	err := do(b, "/channels/1/pins")
	t.Logf("B: err=%v", err)
	assert.EqualValues(t, 1, hitsOf(&hits, "/api/v10/channels/1/pins"), "B sent into bucket pins, which A's 429 holds for 30 s")
}

// paceCounter counts the scripts run on the names a gate keeps
// (namesKey: the request scope, a unit separator, "names", ":pace").
type paceCounter struct{ names, all atomic.Int64 }

func (c *paceCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *paceCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.all.Add(1)
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && strings.HasSuffix(s, "\x1fnames:pace") {
				c.names.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}
func (c *paceCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestNamedFleetCostsServersThatNameNothing: a server that names no
// limit (a plain 429, Retry-After 1). Process A is throttled; process B's
// calls are held by A's hold and deferred (MaxWait 100 ms). None of them
// reads the names kept in Redis: a refusal that is not the marks' costs
// its take alone.
func TestNamedFleetCostsServersThatNameNothing(t *testing.T) {
	s := startRedis(t)
	var throttled atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if throttled.CompareAndSwap(false, true) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	t.Cleanup(srv.Close)
	policy := heed.WithPolicy(heed.Policy{MaxAttempts: 1, MaxWait: 100 * time.Millisecond})
	a := heed.New(nil, heed.WithGate(New(s.client(t), patient)), policy)
	cb := s.client(t)
	var count paceCounter
	cb.AddHook(&count)
	b := heed.New(nil, heed.WithGate(New(cb, patient)), policy)
	t.Cleanup(a.CloseIdleConnections)
	t.Cleanup(b.CloseIdleConnections)
	do := func(tr *heed.Transport) error {
		req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/x", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		return err
	}
	_ = do(a) // 429: the scope held a second
	const calls = 10
	for range calls {
		var de *heed.DeferredError
		require.ErrorAs(t, do(b), &de)
	}
	t.Logf("%d refused calls of a scope that names nothing: %d Redis commands, %d of them on the names", calls, count.all.Load(), count.names.Load())
	assert.Zero(t, count.names.Load(), "names read for a server that never named a limit")
	_ = strconv.Itoa
}
