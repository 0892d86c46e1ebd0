package heed_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

func TestPolicyDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// MaxWait 60s: a 61s hint defers, with no deadline.
		_, err := heed.New(script(tooMany("Retry-After", "61"))).RoundTrip(newRequest(t, t.Context(), "GET", "https://x.example/", nil))
		require.ErrorIs(t, err, heed.ErrDeferred)
		// MinWait 1s.
		rt := script(tooMany("Retry-After", "0"), ok200)
		resp, err := heed.New(rt).RoundTrip(newRequest(t, t.Context(), "GET", "https://x.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []time.Duration{time.Second}, rt.gaps())
		// Backoff EqualJitter(1s, 30s): the first retry waits in [0.5s, 1s].
		rt = script(boom500, ok200)
		resp, err = heed.New(rt, heed.WithGate(heed.NewGate())).RoundTrip(newRequest(t, t.Context(), "GET", "https://y.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		g := rt.gaps()
		require.Len(t, g, 1)
		assert.GreaterOrEqual(t, g[0], 500*time.Millisecond)
		assert.LessOrEqual(t, g[0], time.Second)
	})
}

func TestBackoffs(t *testing.T) {
	for retry := 1; retry <= 70; retry++ {
		want := min(time.Second<<min(retry-1, 5), 30*time.Second)
		e := heed.EqualJitter(time.Second, 30*time.Second)(retry)
		assert.GreaterOrEqual(t, e, want/2, "equal jitter, retry %d", retry)
		assert.LessOrEqual(t, e, want, "equal jitter, retry %d", retry)
		f := heed.FullJitter(time.Second, 30*time.Second)(retry)
		assert.GreaterOrEqual(t, f, time.Duration(0))
		assert.LessOrEqual(t, f, want)
		assert.Equal(t, 3*time.Second, heed.Constant(3*time.Second)(retry))
	}
	// Huge values do not overflow.
	assert.Positive(t, heed.EqualJitter(time.Hour, 1<<62)(1000))
	assert.Equal(t, time.Duration(0), heed.FullJitter(0, time.Second)(3))
	// Equal jitter actually varies.
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[heed.EqualJitter(time.Second, 30*time.Second)(3)] = true
	}
	assert.Greater(t, len(seen), 1)
}

func TestScopeGroupsRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(tooMany("Retry-After", "5"), ok200)
		tr := heed.New(rt,
			heed.WithRoute("a.example/", heed.Policy{Scope: "vendor", MaxAttempts: 1}),
			heed.WithRoute("b.example/", heed.Policy{Scope: "vendor"}),
		)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://a.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		resp, err = tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "https://b.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.GreaterOrEqual(t, time.Since(start), 5*time.Second, "b waits for a's hint: one scope")
		assert.LessOrEqual(t, time.Since(start), 5*time.Second+20*time.Millisecond)
	})
}

func TestTransportPolicyFillsDefaults(t *testing.T) {
	tr := heed.New(nil, heed.WithRoute("POST /v1/", heed.Policy{MaxAttempts: 2, KeyHeader: "idempotency-key"}))
	p := policyOf(tr, mustReq("POST", nil))
	assert.Equal(t, "default", p.Name, "mustReq's path /up matches no route")
	req, _ := http.NewRequest("POST", "https://x.example/v1/a", nil)
	p = policyOf(tr, req)
	assert.Equal(t, "POST /v1/", p.Name)
	assert.Equal(t, 2, p.MaxAttempts)
	assert.Equal(t, heed.DefaultMaxWait, p.MaxWait)
	assert.Equal(t, heed.DefaultMinWait, p.MinWait)
	assert.Equal(t, "Idempotency-Key", p.KeyHeader)
	assert.NotNil(t, p.Backoff)
	assert.NotNil(t, p.Classify)
}

func TestDesignWithLoggerAndWithGateNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(tooMany("Retry-After", "1"), ok200)
		tr := heed.New(rt, heed.WithLogger(nil), heed.WithGate(nil))
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Len(t, rt.requests(), 2)
	})
}
