package redisgate

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// onlyOnce is a policy that sends each request once, so a 429 comes back
// to the test rather than being waited out.
var onlyOnce = heed.WithPolicy(heed.Policy{MaxAttempts: 1})

// TestHoldOutlivesAPausedRedis: with Redis hung, a Retry-After the
// Transport is told still holds the scope: the gate falls back to what
// this process knows, and sends nothing inside the hold.
func TestHoldOutlivesAPausedRedis(t *testing.T) {
	s := startRedis(t)
	srv, hits := newAPI(t) // /throttle holds for 2s
	g := New(s.client(t), WithTimeout(50*time.Millisecond)).(*gate)
	tr := heed.New(nil, heed.WithGate(g), onlyOnce)
	t.Cleanup(tr.CloseIdleConnections)
	g.timeout = 5 * time.Second // connect and load the scripts
	status, err := get(t, tr, srv.URL+"/ok", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	g.timeout = 50 * time.Millisecond

	s.pause(t)
	status, err = get(t, tr, srv.URL+"/throttle", 5*time.Second)
	held := time.Now()
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, status)
	// Each request pays a Redis timeout; all of them are well inside the
	// hold of two seconds.
	for i := 0; i < 8 && time.Since(held) < 1500*time.Millisecond; i++ {
		_, err := get(t, tr, srv.URL+"/ok", 300*time.Millisecond)
		var de *heed.DeferredError
		if assert.ErrorAs(t, err, &de, "request %d", i) {
			assert.Zero(t, de.Attempts, "request %d: nothing sent", i)
			assert.Equal(t, "cooling down", de.Reason)
			assert.WithinDuration(t, held.Add(2*time.Second), de.RetryAt, 500*time.Millisecond, "until the hint's end")
		}
	}
	assert.Equal(t, int64(1), hitsOf(hits, "/ok"), "no send inside the hold: only the one before it")

	// Once Redis answers again, it learns the hold from this process.
	s.resume(t)
	require.NoError(t, s.client(t).FlushAll(t.Context()).Err()) // whatever Redis ran late
	g.timeout = 5 * time.Second
	_, err = g.NotBefore(t.Context(), "other")
	require.NoError(t, err)
	other := New(s.client(t), patient)
	nb, err := other.NotBefore(t.Context(), hostOf(t, srv))
	require.NoError(t, err)
	assert.WithinDuration(t, held.Add(2*time.Second), nb, 500*time.Millisecond, "the hold is back in Redis")
}

// hostOf returns the scope of srv's requests: its host.
func hostOf(t testing.TB, srv *httptest.Server) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	return req.URL.Host
}

// TestRestartedRedisGetsHoldsBack: a Redis that restarts empty gets the
// holds a process knows back on that process's next call, of the held
// scope or of another, so another process, with its own client and
// gate, sends nothing inside them.
func TestRestartedRedisGetsHoldsBack(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name   string
		same   bool // the first process's call is to the held scope
		loaded bool // another process ran the scripts in Redis first
	}{
		{"call to the held scope", true, false},
		{"call to another scope", false, false},
		{"call to another scope, scripts loaded", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, hits := newAPI(t) // /throttle holds for 2s
			elsewhere, _ := newAPI(t)
			ga := New(s.client(t), patient).(*gate)
			ga.reassertEvery = 200 * time.Millisecond
			a := heed.New(nil, heed.WithGate(ga), onlyOnce)
			t.Cleanup(a.CloseIdleConnections)
			status, err := get(t, a, held.URL+"/throttle", 5*time.Second)
			start := time.Now()
			require.NoError(t, err)
			require.Equal(t, http.StatusTooManyRequests, status)

			s.restart(t)
			if tt.loaded {
				// Another process runs every script in the empty Redis
				// first; its client connects anew, the first process's
				// reconnects without an error.
				other := New(s.client(t), patient)
				for _, op := range gateOps {
					require.NoError(t, op.call(t.Context(), other.(heed.QuotaGate)), op.name)
				}
				time.Sleep(ga.reassertEvery)
			}
			if tt.same {
				_, err := get(t, a, held.URL+"/ok", 300*time.Millisecond)
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de, "the first process knows its hold")
				assert.Zero(t, de.Attempts)
			} else {
				status, err := get(t, a, elsewhere.URL+"/ok", 5*time.Second)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)
			}

			b := heed.New(nil, heed.WithGate(New(s.client(t), patient)), onlyOnce)
			t.Cleanup(b.CloseIdleConnections)
			_, err = get(t, b, held.URL+"/ok", 300*time.Millisecond)
			var de *heed.DeferredError
			if assert.ErrorAs(t, err, &de, "another process sees the hold") {
				assert.Zero(t, de.Attempts)
				assert.WithinDuration(t, start.Add(2*time.Second), de.RetryAt, time.Second)
			}
			assert.Zero(t, hitsOf(hits, "/ok"), "no send inside the hold")
		})
	}
}

// TestQuotaOutlivesADownRedis: a quota a response published while Redis
// answered is still counted, by this process, once Redis is gone.
func TestQuotaOutlivesADownRedis(t *testing.T) {
	s := startRedis(t)
	g := New(s.client(t), WithTimeout(50*time.Millisecond)).(*gate)
	ctx := t.Context()
	g.timeout = 5 * time.Second
	reset := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	for range 2 {
		at, err := g.Take(ctx, "s")
		require.NoError(t, err)
		require.True(t, at.IsZero())
	}
	require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 1, Reset: reset}, true))
	require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 2, Reset: reset}, true))
	g.timeout = 50 * time.Millisecond

	s.stop()
	at, err := g.Take(ctx, "s")
	require.NoError(t, err)
	assert.True(t, at.IsZero(), "the one send left")
	require.Error(t, g.Done(ctx, "s", nil, true), "Redis did not hear of it")
	at, err = g.Take(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, reset, at, "then none until the reset")
	nb, err := g.NotBefore(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, reset, nb)
}

// TestLocalHoldsAreForgotten: the holds a process keeps beside Redis are
// forgotten once over, so that many scopes held once do not grow them.
func TestLocalHoldsAreForgotten(t *testing.T) {
	l := newLocal()
	for i := range 10 * minSweep {
		now := int64(1000 * i)
		l.hold(strconv.Itoa(i), now+500, now)
		l.hold("long", now+1e9, now)
		require.LessOrEqual(t, len(l.holds), 2*minSweep)
	}
	now := int64(1000 * 10 * minSweep)
	assert.Equal(t, map[string]int64{"long": now - 1000 + 1e9}, l.held(now))
	assert.Len(t, l.holds, 1)
	assert.Zero(t, l.heldUntil("0", now))
	assert.Equal(t, now-1000+1e9, l.heldUntil("long", now))
}
