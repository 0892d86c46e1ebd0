package redisgate

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// patient is the timeout of gates in tests that want every call to
// succeed, even on a loaded machine under -race.
var patient = WithTimeout(5 * time.Second)

// newGate returns a patient gate on a client of s.
func newGate(t testing.TB, s *redisServer, opts ...Option) *gate {
	return New(s.client(t), append([]Option{patient}, opts...)...).(*gate)
}

func TestNewIsQuotaGate(t *testing.T) {
	s := startRedis(t)
	_, ok := New(s.client(t)).(heed.QuotaGate)
	assert.True(t, ok)
	assert.Panics(t, func() { New(nil) })
}

func TestHoldExtendsNeverShortens(t *testing.T) {
	s := startRedis(t)
	g := newGate(t, s)
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	nb, err := g.NotBefore(ctx, "s")
	require.NoError(t, err)
	assert.True(t, nb.IsZero(), "an unknown scope lets requests through")
	steps := []struct {
		name string
		hold time.Duration
		want time.Duration
	}{
		{"first", 10 * time.Second, 10 * time.Second},
		{"shorter", 5 * time.Second, 10 * time.Second},
		{"longer", 20 * time.Second, 20 * time.Second},
		{"past", -time.Second, 20 * time.Second},
		{"same", 20 * time.Second, 20 * time.Second},
	}
	for _, st := range steps {
		require.NoError(t, g.Hold(ctx, "s", now.Add(st.hold)), st.name)
		nb, err := g.NotBefore(ctx, "s")
		require.NoError(t, err)
		assert.Equal(t, now.Add(st.want).UnixMilli(), nb.UnixMilli(), st.name)
		at, err := g.Take(ctx, "s")
		require.NoError(t, err)
		assert.Equal(t, now.Add(st.want).UnixMilli(), at.UnixMilli(), "%s: Take answers the hold", st.name)
	}
	nb, err = g.NotBefore(ctx, "other")
	require.NoError(t, err)
	assert.True(t, nb.IsZero(), "scopes are separate")
}

func TestHoldRoundsUp(t *testing.T) {
	s := startRedis(t)
	g := newGate(t, s)
	tests := []struct {
		name  string
		extra time.Duration // past a whole millisecond
		want  time.Duration // past the same millisecond
	}{
		{"whole", 0, 0},
		{"1ns", time.Nanosecond, time.Millisecond},
		{"999µs", 999 * time.Microsecond, time.Millisecond},
	}
	base := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			until := base.Add(tt.extra)
			require.NoError(t, g.Hold(t.Context(), tt.name, until))
			nb, err := g.NotBefore(t.Context(), tt.name)
			require.NoError(t, err)
			assert.False(t, nb.Before(until), "never sooner than asked")
			assert.Equal(t, base.Add(tt.want), nb)
		})
	}
}

func TestHoldExpires(t *testing.T) {
	s := startRedis(t)
	g := newGate(t, s)
	g.margin = 50 * time.Millisecond
	ctx := t.Context()
	// hold holds s until until, and wants its key to expire at until plus
	// the margin, give or take the latency of the calls; it returns when
	// the key expires, as read.
	hold := func(until time.Time) time.Time {
		t.Helper()
		start := time.Now()
		require.NoError(t, g.Hold(ctx, "s", until))
		took := time.Since(start)
		before := time.Now()
		ttl, err := g.client.PTTL(ctx, g.key("s")).Result()
		require.NoError(t, err)
		after := time.Now()
		at := until.Add(g.margin)
		assert.GreaterOrEqual(t, ttl, at.Sub(after)-2*time.Millisecond, "no sooner than the hold and the margin")
		assert.LessOrEqual(t, ttl, at.Sub(before)+took+2*time.Millisecond, "nor much later")
		return after.Add(ttl)
	}
	until := time.Now().Add(time.Second)
	hold(until)
	later := until.Add(500 * time.Millisecond)
	expires := hold(later)
	// A shorter hold changes nothing: the key expires when the longer
	// one's does (to the millisecond PTTL counts in, and the two reads).
	require.NoError(t, g.Hold(ctx, "s", until))
	before := time.Now()
	ttl, err := g.client.PTTL(ctx, g.key("s")).Result()
	require.NoError(t, err)
	after := time.Now()
	assert.WithinDuration(t, expires, before.Add(ttl), after.Sub(before)+2*time.Millisecond, "a shorter hold changes nothing")

	time.Sleep(time.Until(later.Add(20 * time.Millisecond)))
	nb, err := g.NotBefore(ctx, "s")
	require.NoError(t, err)
	assert.False(t, nb.After(time.Now()), "a passed hold lets requests through")
	at, err := g.Take(ctx, "s")
	require.NoError(t, err)
	assert.True(t, at.IsZero())
	require.NoError(t, g.Done(ctx, "s", nil, true))

	// With no hold, no quota and nothing in flight, the key stays only
	// for the inferred quota: the episode that began at the hold's end is
	// measured for two seconds.
	ttl, err = g.client.PTTL(ctx, g.key("s")).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Until(later.Add(2*time.Second+g.margin)).Seconds(), ttl.Seconds(), 0.05)
	off := newGate(t, s, WithInferredQuota(false), WithPrefix("off:"))
	require.NoError(t, off.Hold(ctx, "s", time.Now().Add(20*time.Millisecond)))
	time.Sleep(30 * time.Millisecond)
	at, err = off.Take(ctx, "s")
	require.NoError(t, err)
	assert.True(t, at.IsZero())
	require.NoError(t, off.Done(ctx, "s", nil, true))
	// Without it, the key goes away at once.
	n, err := g.client.Exists(ctx, off.key("s")).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, g.client.Del(ctx, g.key("s")).Err())

	// Left alone, a key expires at the margin after its hold.
	until = time.Now().Add(500 * time.Millisecond)
	hold(until)
	time.Sleep(time.Until(until.Add(g.margin + 20*time.Millisecond)))
	n, err = g.client.Exists(ctx, g.key("s")).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestPrefix(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name string
		opts []Option
		key  string
	}{
		{"default", nil, "heed:gate:{api.example}"},
		{"set", []Option{WithPrefix("svc:limits:")}, "svc:limits:{api.example}"},
		{"empty", []Option{WithPrefix("")}, "{api.example}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.client(t)
			require.NoError(t, c.FlushAll(t.Context()).Err())
			g := New(c, append([]Option{patient}, tt.opts...)...)
			require.NoError(t, g.Hold(t.Context(), "api.example", time.Now().Add(time.Minute)))
			keys, err := c.Keys(t.Context(), "*").Result()
			require.NoError(t, err)
			assert.Equal(t, []string{tt.key}, keys)
		})
	}
	// Gates with different prefixes do not see each other.
	c := s.client(t)
	a, b := New(c, patient, WithPrefix("a:")), New(c, patient, WithPrefix("b:"))
	require.NoError(t, a.Hold(t.Context(), "x", time.Now().Add(time.Minute)))
	nb, err := b.NotBefore(t.Context(), "x")
	require.NoError(t, err)
	assert.True(t, nb.IsZero())
}

func TestTwoGatesShareAScope(t *testing.T) {
	s := startRedis(t)
	a, b := newGate(t, s), newGate(t, s)
	ctx := t.Context()
	until := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	require.NoError(t, a.Hold(ctx, "s", until))
	at, err := b.Take(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, until, at, "b sees a's hold")

	reset := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	at, err = b.Take(ctx, "q")
	require.NoError(t, err)
	require.True(t, at.IsZero())
	require.NoError(t, b.Done(ctx, "q", &heed.Quota{Remaining: 1, Reset: reset}, true))
	at, err = a.Take(ctx, "q")
	require.NoError(t, err)
	assert.True(t, at.IsZero(), "a takes the last send b learned of")
	at, err = b.Take(ctx, "q")
	require.NoError(t, err)
	assert.Equal(t, reset, at, "and b waits for the reset")
}

func TestScopeKeyExpiresWithItsQuotaAndSends(t *testing.T) {
	s := startRedis(t)
	g := newGate(t, s, WithMaxInFlight(10*time.Second))
	ctx := t.Context()
	at, err := g.Take(ctx, "s")
	require.NoError(t, err)
	require.True(t, at.IsZero())
	ttl, err := g.client.PTTL(ctx, g.key("s")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 10*time.Second, "a send in flight counts at least the lifetime")
	assert.LessOrEqual(t, ttl, 20*time.Second+expiryMargin+2*time.Millisecond, "and less than two")

	require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 5, Reset: time.Now().Add(time.Hour)}, true))
	ttl, err = g.client.PTTL(ctx, g.key("s")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 59*time.Minute, "the quota lives to its reset")
	assert.LessOrEqual(t, ttl, time.Hour+expiryMargin+2*time.Millisecond)
}

func TestClientKinds(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name    string
		client  func() redis.UniversalClient
		bounded bool
	}{
		{"client with context timeouts", func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true})
		}, true},
		{"client", func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: s.addr}) }, false},
		{"universal", func() redis.UniversalClient {
			return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{s.addr}, ContextTimeoutEnabled: true})
		}, true},
		{"ring", func() redis.UniversalClient {
			return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": s.addr}})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client()
			defer c.Close()
			g := New(c, patient).(*gate)
			assert.Equal(t, tt.bounded, g.bounded)
			until := time.Now().Add(time.Minute).Truncate(time.Millisecond)
			require.NoError(t, g.Hold(t.Context(), tt.name, until))
			at, err := g.Take(t.Context(), tt.name)
			require.NoError(t, err)
			assert.Equal(t, until, at)
		})
	}
}

// TestConcurrentHolds: holds from many goroutines of several gates end at
// the latest of them.
func TestConcurrentHolds(t *testing.T) {
	s := startRedis(t)
	gates := []*gate{newGate(t, s), newGate(t, s), newGate(t, s)}
	now := time.Now().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			g := gates[i%len(gates)]
			assert.NoError(t, g.Hold(t.Context(), "s", now.Add(time.Duration(i+1)*time.Second)))
			_, err := g.NotBefore(t.Context(), "s")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	nb, err := gates[0].NotBefore(t.Context(), "s")
	require.NoError(t, err)
	assert.Equal(t, now.Add(100*time.Second), nb)
}

// clockedGate returns a gate on s, in a scope of its own, whose clock
// stands at the returned time until the test moves it, and which has
// admitted n sends.
func clockedGate(t *testing.T, s *redisServer, n int) (*gate, *time.Time) {
	g := newGate(t, s, WithPrefix(t.Name()+":"))
	clock := time.Now().Truncate(time.Millisecond)
	g.now = func() time.Time { return clock }
	// The test moves the clock: it is the gate's, not to be measured
	// against Redis's (a standing clock reads as one that steps).
	neverMeasure(g)
	for range n {
		at, err := g.Take(t.Context(), "s")
		require.NoError(t, err)
		require.True(t, at.IsZero())
	}
	return g, &clock
}

// TestRecheckNoLaterThanTheReset: a send refused while sends set against
// the quota are in flight asks again rules.QuotaRecheck later, or at the
// reset if that comes first. (TestQuotaMatchesMemGate has the rest.)
func TestRecheckNoLaterThanTheReset(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name    string
		reset   time.Duration
		recheck bool // want a recheck, not the reset
	}{
		{"reset later", time.Second, true},
		{"reset sooner", rules.QuotaRecheck / 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, clock := clockedGate(t, s, 2)
			reset := clock.Add(tt.reset)
			require.NoError(t, g.Done(t.Context(), "s", &heed.Quota{Remaining: 0, Reset: reset}, true))
			want := reset
			if tt.recheck {
				want = clock.Add(rules.QuotaRecheck)
			}
			at, err := g.Take(t.Context(), "s")
			require.NoError(t, err)
			assert.Equal(t, want, at)
		})
	}
}

// TestDoneAfterTheContextEnded: a send whose caller gave up is reported to
// Redis all the same, so that the sends a spent quota refused stop
// rechecking for its answer and wait for the reset.
func TestDoneAfterTheContextEnded(t *testing.T) {
	s := startRedis(t)
	g, clock := clockedGate(t, s, 2)
	reset := clock.Add(time.Second)
	// The second answers first, leaving nothing; the first is in flight.
	require.NoError(t, g.Done(t.Context(), "s", &heed.Quota{Remaining: 0, Reset: reset}, true))
	at, err := g.Take(t.Context(), "s")
	require.NoError(t, err)
	require.Equal(t, clock.Add(rules.QuotaRecheck), at, "a recheck while the first is in flight")
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, g.Done(ended, "s", nil, true))
	at, err = g.Take(t.Context(), "s")
	require.NoError(t, err)
	assert.Equal(t, reset, at, "nothing in flight: the reset")
}
