package redisgate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heed-go/heed"
)

// get sends a GET of url through tr with a deadline of d, and closes the
// response body.
func get(t testing.TB, tr http.RoundTripper, url string, d time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// newAPI returns a loopback server with /throttle (429, Retry-After: 2),
// /spent (200 with no quota left for 30s) and /ok, counting the requests
// to each path.
func newAPI(t testing.TB) (*httptest.Server, *sync.Map) {
	var hits sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		switch r.URL.Path {
		case "/throttle":
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/spent":
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", "30")
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func hitsOf(hits *sync.Map, path string) int64 {
	n, ok := hits.Load(path)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// TestTransportsShareHoldsAndQuotas: two Transports, as of two processes,
// on one redisgate each, see each other's holds and quotas.
func TestTransportsShareHoldsAndQuotas(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name string
		path string        // what a learns from
		wait time.Duration // what b then must wait, at least
	}{
		{"hold", "/throttle", 2 * time.Second},
		{"quota", "/spent", 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := newAPI(t)
			policy := heed.WithPolicy(heed.Policy{MaxAttempts: 1})
			a := heed.New(nil, policy, heed.WithGate(New(s.client(t), patient, WithPrefix(t.Name()+":"))))
			b := heed.New(nil, policy, heed.WithGate(New(s.client(t), patient, WithPrefix(t.Name()+":"))))
			t.Cleanup(a.CloseIdleConnections)
			t.Cleanup(b.CloseIdleConnections)

			start := time.Now()
			_, err := get(t, a, srv.URL+tt.path, 5*time.Second)
			require.NoError(t, err)
			_, err = get(t, b, srv.URL+"/ok", 500*time.Millisecond)
			var de *heed.DeferredError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, 0, de.Attempts, "nothing sent")
			assert.Equal(t, "cooling down", de.Reason)
			assert.GreaterOrEqual(t, de.RetryAt.Sub(start), tt.wait)
			assert.Less(t, de.RetryAt.Sub(start), tt.wait+5*time.Second)
			assert.Zero(t, hitsOf(hits, "/ok"))
		})
	}
}

// TestTransportsWaitOutASharedHold: b waits for a's hold when it fits, and
// sends no sooner.
func TestTransportsWaitOutASharedHold(t *testing.T) {
	s := startRedis(t)
	srv, hits := newAPI(t)
	var sent atomic.Int64
	srv.Config.Handler = wrap(srv.Config.Handler, func() { sent.Store(time.Now().UnixNano()) })
	a := heed.New(nil, heed.WithGate(New(s.client(t), patient)), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
	b := heed.New(nil, heed.WithGate(New(s.client(t), patient)))
	t.Cleanup(a.CloseIdleConnections)
	t.Cleanup(b.CloseIdleConnections)
	held := time.Now()
	_, err := get(t, a, srv.URL+"/throttle", 5*time.Second)
	require.NoError(t, err)
	status, err := get(t, b, srv.URL+"/ok", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.GreaterOrEqual(t, time.Unix(0, sent.Load()).Sub(held), 2*time.Second, "b waited for a's Retry-After")
	assert.Equal(t, int64(1), hitsOf(hits, "/ok"))
}

func wrap(h http.Handler, before func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		before()
		h.ServeHTTP(w, r)
	})
}

// gateOps are the calls a Transport makes, each of which must fail open:
// the reads answer from what the process knows, the writes say that
// Redis did not get them.
var gateOps = []struct {
	name   string
	writes bool // fails with an error; a read answers without one
	call   func(ctx context.Context, g heed.QuotaGate) error
}{
	{"NotBefore", false, func(ctx context.Context, g heed.QuotaGate) error { _, err := g.NotBefore(ctx, "s"); return err }},
	{"Hold", true, func(ctx context.Context, g heed.QuotaGate) error {
		return g.Hold(ctx, "s", time.Now().Add(time.Second))
	}},
	{"Take", false, func(ctx context.Context, g heed.QuotaGate) error { _, err := g.Take(ctx, "s"); return err }},
	{"Done", true, func(ctx context.Context, g heed.QuotaGate) error {
		return g.Done(ctx, "s", &heed.Quota{Remaining: 1, Reset: time.Now().Add(time.Second)}, true)
	}},
}

// TestFailOpenWhenRedisIsDown: with Redis gone, every call returns at
// once, the writes with an error, requests still flow, and the gate and
// the Transport warn.
func TestFailOpenWhenRedisIsDown(t *testing.T) {
	s := startRedis(t)
	srv, _ := newAPI(t)
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	g := New(s.client(t), WithLogger(log.Named("gate")), WithTimeout(50*time.Millisecond)).(*gate)
	tr := heed.New(nil, heed.WithGate(g), heed.WithLogger(log.Named("transport")))
	t.Cleanup(tr.CloseIdleConnections)

	g.timeout = 5 * time.Second // the first call loads the scripts: wait for it
	status, err := get(t, tr, srv.URL+"/ok", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Zero(t, logs.Len(), "nothing to say while Redis answers")
	g.timeout = 50 * time.Millisecond

	s.stop()
	stopped := time.Now()
	for _, op := range gateOps {
		start := time.Now()
		err := op.call(t.Context(), g)
		if op.writes {
			assert.Error(t, err, op.name)
		} else {
			assert.NoError(t, err, "%s answers from what the process knows", op.name)
		}
		assert.Less(t, time.Since(start), time.Second, "%s fails fast", op.name)
	}
	for range 20 {
		start := time.Now()
		status, err := get(t, tr, srv.URL+"/ok", 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, status)
		assert.Less(t, time.Since(start), 2*time.Second, "the request does not wait for Redis")
	}
	gateWarns := logs.FilterLoggerName("gate").FilterLevelExact(zapcore.WarnLevel).Len()
	assert.Positive(t, gateWarns, "the gate warns")
	assert.LessOrEqual(t, gateWarns, 1+int(time.Since(stopped)/warnEvery), "at most once a second")
	assert.GreaterOrEqual(t, logs.FilterLoggerName("transport").FilterMessage("gate error").Len(), 20, "the Transport logs every failure")
}

// TestFailOpenWhenRedisIsSlow: with Redis paused, every call returns within
// the timeout, the writes with an error, whether or not the client honours
// contexts' deadlines, and requests still flow.
func TestFailOpenWhenRedisIsSlow(t *testing.T) {
	s := startRedis(t)
	srv, _ := newAPI(t)
	const timeout = 50 * time.Millisecond
	type subject struct {
		name string
		g    *gate
		tr   *heed.Transport
		logs *observer.ObservedLogs
	}
	var subjects []subject
	for _, ctxTimeout := range []bool{true, false} {
		name := "ContextTimeoutEnabled"
		if !ctxTimeout {
			name = "no ContextTimeoutEnabled"
		}
		core, logs := observer.New(zapcore.WarnLevel)
		g := New(s.clientWith(t, ctxTimeout), WithTimeout(timeout), WithLogger(zap.New(core))).(*gate)
		require.Equal(t, ctxTimeout, g.bounded)
		tr := heed.New(nil, heed.WithGate(g))
		t.Cleanup(tr.CloseIdleConnections)
		g.timeout = 5 * time.Second // connect and load the scripts
		_, err := get(t, tr, srv.URL+"/ok", 5*time.Second)
		require.NoError(t, err)
		require.Zero(t, logs.Len())
		g.timeout = timeout
		subjects = append(subjects, subject{name, g, tr, logs})
	}

	// Redis holds every command for the pause: the calls below fail by
	// their deadline, which shows they ran within it.
	const pause = 4 * time.Second
	require.NoError(t, s.client(t).Do(t.Context(), "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err())
	for _, sub := range subjects {
		t.Run(sub.name, func(t *testing.T) {
			start := time.Now()
			for _, op := range gateOps {
				start := time.Now()
				err := op.call(t.Context(), sub.g)
				took := time.Since(start)
				if op.writes {
					require.Error(t, err, op.name)
					assert.ErrorIs(t, err, context.DeadlineExceeded)
				} else {
					require.NoError(t, err, op.name)
				}
				// Redis answers after the pause; the bound leaves room for
				// a loaded machine's late timers.
				assert.Less(t, took, time.Second, "%s returns at the timeout, not when Redis does", op.name)
				t.Logf("%s failed open in %v", op.name, took)
			}
			for range 3 {
				start := time.Now()
				status, err := get(t, sub.tr, srv.URL+"/ok", 5*time.Second)
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, status)
				assert.Less(t, time.Since(start), 2*time.Second, "a request pays its gate calls' timeouts, not the pause")
			}
			warns := sub.logs.Len()
			assert.Positive(t, warns)
			assert.LessOrEqual(t, warns, 1+int(time.Since(start)/warnEvery), "at most one warning a second")
			assert.Contains(t, sub.logs.All()[0].ContextMap()["error"], "no answer from Redis within 50ms")
		})
	}
	// Once Redis answers again, so does the gate: a write, which says
	// whether Redis got it, succeeds.
	for _, sub := range subjects {
		require.Eventually(t, func() bool {
			return sub.g.Hold(t.Context(), "s", time.Now().Add(time.Second)) == nil
		}, pause+5*time.Second, 20*time.Millisecond)
	}
}

// TestKillRedisMidRun: killing redis-server in the middle of a run of
// concurrent requests loses none: every call ends in a response or a
// *heed.DeferredError.
func TestKillRedisMidRun(t *testing.T) {
	s := startRedis(t)
	srv := httptest.NewServer(newWindow(100, false))
	t.Cleanup(srv.Close)
	core, logs := observer.New(zapcore.WarnLevel)
	g := New(s.client(t), WithLogger(zap.New(core)))
	tr := heed.New(nil, heed.WithGate(g), heed.WithPolicy(heed.Policy{MaxAttempts: 10}))
	t.Cleanup(tr.CloseIdleConnections)

	const workers, each = 8, 40
	var finished, responses, deferred atomic.Int64
	var other sync.Map
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				status, err := get(t, tr, srv.URL+"/", 3*time.Second)
				var de *heed.DeferredError
				switch {
				case err == nil:
					responses.Add(1)
					_ = status
				case errors.As(err, &de):
					deferred.Add(1)
				default:
					other.Store(err.Error(), true)
				}
				if finished.Add(1) == workers*each/3 {
					s.stop()
				}
			}
		})
	}
	wg.Wait()
	other.Range(func(k, _ any) bool {
		t.Errorf("a call ended in neither a response nor a *DeferredError: %v", k)
		return true
	})
	assert.Equal(t, int64(workers*each), responses.Load()+deferred.Load())
	assert.Positive(t, logs.Len(), "the gate warned")
	t.Logf("%d calls: %d responses, %d deferred", workers*each, responses.Load(), deferred.Load())
}
