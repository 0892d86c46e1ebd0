package redisgate

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// hashFields are the fields of a scope's hash (see scripts.go).
var hashFields = []string{"u", "k", "a", "r", "m", "s", "b", "n", "o",
	"e", "t", "x", "v", "l", "p", "c", "w", "q", "g", "h"}

// TestCorruptFieldsAreIgnored: whatever a field of a scope's hash holds,
// set by hand, alone or in a hash that says something, every call answers
// without a script error, a new hold holds, and the key gets an expiry
// within the horizon.
func TestCorruptFieldsAreIgnored(t *testing.T) {
	s := startRedis(t)
	values := []string{"inf", "nan", "-inf", "1e20", "abc", "", "-1", "-1e20", "1.5", "99999999999999999999"}
	for _, live := range []bool{false, true} {
		for _, field := range hashFields {
			for _, value := range values {
				name := "alone/" + field + "=" + value
				if live {
					name = "live/" + field + "=" + value
				}
				t.Run(name, func(t *testing.T) {
					g := newGate(t, s, WithPrefix(t.Name()+":"))
					ctx := t.Context()
					key := g.key("s")
					if live {
						// A send in flight, a quota and an episode.
						for range 2 {
							at, err := g.Take(ctx, "s")
							require.NoError(t, err)
							require.True(t, at.IsZero())
						}
						require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 5, Reset: time.Now().Add(time.Minute)}, true))
					}
					require.NoError(t, g.client.HSet(ctx, key, field, value).Err())
					checkGateWorks(t, g, key)
				})
			}
		}
	}
}

// TestCorruptKeyIsReplaced: a scope's key that is not a hash is replaced.
func TestCorruptKeyIsReplaced(t *testing.T) {
	s := startRedis(t)
	g := newGate(t, s)
	key := g.key("s")
	require.NoError(t, g.client.Set(t.Context(), key, "not a hash", 0).Err())
	checkGateWorks(t, g, key)
}

// checkGateWorks makes every call of g on scope s, whose hash is key,
// and checks that none fails, that a hold then holds, and that key
// expires within the horizon.
func checkGateWorks(t *testing.T, g *gate, key string) {
	t.Helper()
	ctx := t.Context()
	_, err := g.NotBefore(ctx, "s")
	require.NoError(t, err, "NotBefore")
	ttl, err := g.client.PTTL(ctx, key).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, Horizon, "after NotBefore, the key expires within the horizon")
	assert.NotEqual(t, time.Duration(-1), ttl, "after NotBefore, the key expires")

	at, err := g.Take(ctx, "s")
	require.NoError(t, err, "Take")
	if at.IsZero() {
		require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 5, Reset: time.Now().Add(time.Minute)}, true), "Done")
	}
	until := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	require.NoError(t, g.Hold(ctx, "s", until), "Hold")
	at, err = g.Take(ctx, "s")
	require.NoError(t, err, "Take")
	assert.Equal(t, until, at, "a new hold holds")
	nb, err := g.NotBefore(ctx, "s")
	require.NoError(t, err, "NotBefore")
	assert.False(t, nb.Before(until), "NotBefore answers it")
	assert.WithinDuration(t, until, nb, 100*time.Millisecond, "or the spent quota's reset, a minute ahead as well")
	ttl, err = g.client.PTTL(ctx, key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 59*time.Second, "the key lives as long as the hold")
	assert.LessOrEqual(t, ttl, Horizon, "and expires within the horizon")
	fields, err := g.client.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	for _, f := range hashFields {
		_, err := strconv.ParseInt(fields[f], 10, 64)
		assert.NoError(t, err, "field %s is written back a whole number", f)
	}
}

// TestTTLWithinTheHorizon: whatever time a caller gives, no key outlives
// the horizon, and no hold or reset lies further ahead than it.
func TestTTLWithinTheHorizon(t *testing.T) {
	s := startRedis(t)
	centuries := time.Now().AddDate(300, 0, 0)
	tests := []struct {
		name string
		opts []Option
		call func(t *testing.T, g *gate)
	}{
		{"hold", nil, func(t *testing.T, g *gate) {
			require.NoError(t, g.Hold(t.Context(), "s", centuries))
		}},
		{"reset", nil, func(t *testing.T, g *gate) {
			at, err := g.Take(t.Context(), "s")
			require.NoError(t, err)
			require.True(t, at.IsZero())
			require.NoError(t, g.Done(t.Context(), "s", &heed.Quota{Remaining: 0, Reset: centuries}, true))
		}},
		{"sends in flight", []Option{WithMaxInFlight(100 * 365 * 24 * time.Hour)}, func(t *testing.T, g *gate) {
			at, err := g.Take(t.Context(), "s")
			require.NoError(t, err)
			require.True(t, at.IsZero())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(t, s, append([]Option{WithPrefix(t.Name() + ":")}, tt.opts...)...)
			start := time.Now().Truncate(time.Millisecond)
			tt.call(t, g)
			ttl, err := g.client.PTTL(t.Context(), g.key("s")).Result()
			require.NoError(t, err)
			assert.Positive(t, ttl)
			assert.LessOrEqual(t, ttl, Horizon, "the key expires within the horizon")
			nb, err := g.NotBefore(t.Context(), "s")
			require.NoError(t, err)
			assert.False(t, nb.After(time.Now().Add(Horizon)), "nothing held past the horizon")
			if tt.name != "sends in flight" {
				assert.False(t, nb.Before(start.Add(Horizon)), "but held to it")
			}
		})
	}
}
