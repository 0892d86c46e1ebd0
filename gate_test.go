package heed_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

func TestGateHoldExtendsNeverShortens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := heed.NewGate()
		ctx := t.Context()
		now := time.Now()
		nb, err := g.NotBefore(ctx, "s")
		require.NoError(t, err)
		assert.True(t, nb.IsZero())
		steps := []struct {
			hold time.Duration
			want time.Duration
		}{
			{10 * time.Second, 10 * time.Second},
			{5 * time.Second, 10 * time.Second},
			{20 * time.Second, 20 * time.Second},
			{-time.Second, 20 * time.Second},
		}
		for _, s := range steps {
			require.NoError(t, g.Hold(ctx, "s", now.Add(s.hold)))
			nb, err := g.NotBefore(ctx, "s")
			require.NoError(t, err)
			assert.Equal(t, now.Add(s.want), nb)
		}
		nb, _ = g.NotBefore(ctx, "other")
		assert.True(t, nb.IsZero(), "scopes are separate")
	})
}

func TestGateConcurrentHolds(t *testing.T) {
	g := heed.NewGate()
	now := time.Now()
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			_ = g.Hold(t.Context(), "s", now.Add(time.Duration(i)*time.Second))
			_, _ = g.NotBefore(t.Context(), "s")
		})
	}
	wg.Wait()
	nb, err := g.NotBefore(t.Context(), "s")
	require.NoError(t, err)
	assert.Equal(t, now.Add(99*time.Second), nb)
}

// After waiting for the gate, heed looks again: a hold extended meanwhile is
// waited out too.
func TestDesignGateLooksAgainAfterWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := heed.NewGate()
		start := time.Now()
		require.NoError(t, gate.Hold(t.Context(), "api.example", start.Add(5*time.Second)))
		time.AfterFunc(3*time.Second, func() { _ = gate.Hold(context.Background(), "api.example", start.Add(10*time.Second)) })
		rt := script(ok200)
		resp, err := heed.New(rt, heed.WithGate(gate)).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		s := rt.requests()
		require.Len(t, s, 1)
		assert.GreaterOrEqual(t, s[0].at.Sub(start), 10*time.Second, "never before the extended hold")
		assert.LessOrEqual(t, s[0].at.Sub(start), 10*time.Second+50*time.Millisecond)
	})
}

// A gate wait longer than MaxWait defers without sending, with no deadline.
func TestDesignGateWaitOverMaxWaitDefers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := heed.NewGate()
		require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(90*time.Second)))
		rt := script(ok200)
		_, err := heed.New(rt, heed.WithGate(gate)).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.Zero(t, de.Attempts)
		assert.Zero(t, de.Left, "no time limit: Left is 0")
		assert.Equal(t, "cooling down", de.Reason)
		assert.Empty(t, rt.requests())
	})
}

// WithGate shares a gate between Transports; without it (or with nil) each
// Transport has its own.
func TestDesignGatePrivateUnlessShared(t *testing.T) {
	shared := heed.NewGate()
	tests := []struct {
		name  string
		opts  func() []heed.Option
		waits bool
	}{
		{"absent: private", func() []heed.Option { return nil }, false},
		{"nil: private", func() []heed.Option { return []heed.Option{heed.WithGate(nil)} }, false},
		{"one gate given to both: shared", func() []heed.Option { return []heed.Option{heed.WithGate(shared)} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if tt.waits {
					shared = heed.NewGate() // a fresh one in this bubble
				}
				one := heed.New(script(tooMany("Retry-After", "7")), append(tt.opts(), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))...)
				rt := script(ok200)
				two := heed.New(rt, tt.opts()...)
				start := time.Now()
				resp, err := one.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/a", nil))
				require.NoError(t, err)
				resp.Body.Close()
				resp, err = two.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/b", nil))
				require.NoError(t, err)
				resp.Body.Close()
				took := rt.requests()[0].at.Sub(start)
				if tt.waits {
					assert.GreaterOrEqual(t, took, 7*time.Second)
				} else {
					assert.Zero(t, took)
				}
			})
		})
	}
}

// The gate is held by a Throttled response with a valid hint, for exactly
// the hint.
func TestDesignThrottledHoldsTheGateForTheHint(t *testing.T) {
	tests := []struct {
		name  string
		reply reply
		hold  time.Duration // 0: not held
	}{
		{"429 Retry-After, jitter not included", tooMany("Retry-After", "3"), 3 * time.Second},
		{"429 retry-after-ms", tooMany("retry-after-ms", "4000"), 4 * time.Second},
		{"503 Retry-After", reply{status: 503, header: hdr("Retry-After", "5")}, 5 * time.Second},
		{"503 without hint: not held", reply{status: 503}, 0},
		{"500 Ambiguous with Retry-After: not held", reply{status: 500, header: hdr("Retry-After", "5")}, 0},
		{"408 Transient with Retry-After: not held", reply{status: 408, header: hdr("Retry-After", "5")}, 0},
		{"200 with Retry-After: not held", reply{status: 200, header: hdr("Retry-After", "5")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gate := heed.NewGate()
				start := time.Now()
				tr := heed.New(script(tt.reply), heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxAttempts: 1, Jitter: 2 * time.Second}))
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
				require.NoError(t, err)
				resp.Body.Close()
				nb, err := gate.NotBefore(t.Context(), "api.example")
				require.NoError(t, err)
				if tt.hold == 0 {
					assert.False(t, nb.After(start), "not held: %v", nb.Sub(start))
					return
				}
				assert.Equal(t, start.Add(tt.hold), nb)
			})
		})
	}
}

// callOrder is a QuotaGate that is not heed's own, as redisgate is, and
// records the calls it gets in order.
type callOrder struct {
	heed.QuotaGate
	mu    sync.Mutex
	calls []string
}

func (g *callOrder) called(name string) {
	g.mu.Lock()
	g.calls = append(g.calls, name)
	g.mu.Unlock()
}

func (g *callOrder) Take(ctx context.Context, scope string) (time.Time, error) {
	g.called("Take")
	return g.QuotaGate.Take(ctx, scope)
}

func (g *callOrder) Hold(ctx context.Context, scope string, until time.Time) error {
	g.called("Hold")
	return g.QuotaGate.Hold(ctx, scope, until)
}

func (g *callOrder) Done(ctx context.Context, scope string, q *heed.Quota, served bool) error {
	g.called("Done")
	return g.QuotaGate.Done(ctx, scope, q, served)
}

// A throttle's hold reaches a gate shared with others before the send is
// done: the fleet hears of it a round trip sooner. An answer with no hold
// is only done.
func TestThrottleHoldsASharedGateBeforeItIsDone(t *testing.T) {
	tests := []struct {
		name  string
		reply reply
		calls []string
	}{
		{"429 Retry-After", tooMany("Retry-After", "3"), []string{"Take", "Hold", "Done"}},
		{"429 retry-after-ms", tooMany("retry-after-ms", "250"), []string{"Take", "Hold", "Done"}},
		{"503 Retry-After", reply{status: 503, header: hdr("Retry-After", "5")}, []string{"Take", "Hold", "Done"}},
		{"429 without hint: not held", tooMany(), []string{"Take", "Done"}},
		{"200: not held", reply{status: 200}, []string{"Take", "Done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gate := &callOrder{QuotaGate: heed.NewGate().(heed.QuotaGate)}
				tr := heed.New(script(tt.reply), heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
				require.NoError(t, err)
				resp.Body.Close()
				gate.mu.Lock()
				defer gate.mu.Unlock()
				assert.Equal(t, tt.calls, gate.calls)
			})
		})
	}
}
