package redisgate

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// count is an update that reads a state as a decimal count and adds one.
func count(n *atomic.Int64) func([]byte) []byte {
	return func(b []byte) []byte {
		n.Add(1)
		v, _ := strconv.Atoi(string(b))
		return []byte(strconv.Itoa(v + 1))
	}
}

// read returns scope's pace as g has it.
func read(t *testing.T, g *gate, scope string) []byte {
	t.Helper()
	var got []byte
	require.NoError(t, g.Pace(t.Context(), scope, func(b []byte) []byte {
		got = b
		return b
	}))
	return got
}

func TestNewIsPaceGate(t *testing.T) {
	s := startRedis(t)
	_, ok := New(s.client(t)).(heed.PaceGate)
	assert.True(t, ok)
}

// TestPaceIsShared: what one gate writes, another on the same Redis and
// prefix reads; one with another prefix does not.
func TestPaceIsShared(t *testing.T) {
	s := startRedis(t)
	a, b := newGate(t, s), newGate(t, s)
	other := newGate(t, s, WithPrefix("other:"))
	assert.Nil(t, read(t, a, "api"), "no pace yet")
	require.NoError(t, a.Pace(t.Context(), "api", func([]byte) []byte { return []byte("state") }))
	assert.Equal(t, []byte("state"), read(t, b, "api"))
	assert.Nil(t, read(t, other, "api"))
	assert.Nil(t, read(t, b, "another"))

	// nil deletes.
	require.NoError(t, b.Pace(t.Context(), "api", func([]byte) []byte { return nil }))
	assert.Nil(t, read(t, a, "api"))
}

// TestPaceUpdatesAreAtomic: updates from several gates, each called by
// several goroutines one at a time as a Transport calls it (under its
// scope's lock), each apply once, on the state the last left, whatever
// their order: the count is the number of calls that returned no error,
// and a call whose state changed under it read it again. How many give up
// (errPaceBusy) under this contention, far more than a fleet's, is logged:
// 0 to 17 of 400 on a quiet 2-core machine, up to 43 under the race
// detector.
func TestPaceUpdatesAreAtomic(t *testing.T) {
	s := startRedis(t)
	for _, tc := range []struct{ gates, goroutines, each int }{
		{1, 4, 25},
		{2, 4, 25},
		{4, 4, 25},
		{8, 2, 25},
	} {
		t.Run(strconv.Itoa(tc.gates)+"x"+strconv.Itoa(tc.goroutines), func(t *testing.T) {
			var gates []*gate
			locks := make([]sync.Mutex, tc.gates)
			for range tc.gates {
				gates = append(gates, newGate(t, s, WithPrefix(t.Name()+":")))
			}
			var calls, ok, busy atomic.Int64
			var wg sync.WaitGroup
			for i := range tc.gates * tc.goroutines {
				g, mu := gates[i%tc.gates], &locks[i%tc.gates]
				wg.Go(func() {
					for range tc.each {
						mu.Lock()
						err := g.Pace(context.Background(), "api", count(&calls))
						mu.Unlock()
						switch {
						case err == nil:
							ok.Add(1)
						case assert.ErrorIs(t, err, errPaceBusy):
							busy.Add(1)
						}
					}
				})
			}
			wg.Wait()
			n, err := strconv.Atoi(string(read(t, gates[0], "api")))
			require.NoError(t, err)
			t.Logf("%d applied, %d busy, %d updates run", ok.Load(), busy.Load(), calls.Load())
			assert.Equal(t, ok.Load(), int64(n), "each call that succeeded applied once")
			assert.Equal(t, int64(tc.gates*tc.goroutines*tc.each), ok.Load()+busy.Load())
			// How few give up under contention is a matter of speed, not of
			// correctness: logged above, not asserted.
			assert.Positive(t, ok.Load(), "updates get through")
		})
	}
}

// TestPaceExpires: a pace lives rules.PaceKeep after its last change, and an
// update that changes nothing writes nothing.
func TestPaceExpires(t *testing.T) {
	s := startRedis(t)
	g := newGate(t, s)
	ctx := t.Context()
	require.NoError(t, g.Pace(ctx, "api", func([]byte) []byte { return []byte("x") }))
	ttl, err := g.client.PTTL(ctx, g.paceKey("api")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, rules.PaceKeep-time.Minute)
	assert.LessOrEqual(t, ttl, rules.PaceKeep)
	v1, err := g.client.HGet(ctx, g.paceKey("api"), "v").Result()
	require.NoError(t, err)
	assert.Equal(t, []byte("x"), read(t, g, "api"))
	v2, err := g.client.HGet(ctx, g.paceKey("api"), "v").Result()
	require.NoError(t, err)
	assert.Equal(t, v1, v2, "an unchanged state is not written")
}

// TestPaceReplacesWhatIsNotAPace: a key that is not a pace, set by hand,
// is read as none and replaced.
func TestPaceReplacesWhatIsNotAPace(t *testing.T) {
	s := startRedis(t)
	g := newGate(t, s)
	ctx := t.Context()
	key := g.paceKey("api")
	for name, set := range map[string]func() error{
		"a string":         func() error { return g.client.Set(ctx, key, "junk", 0).Err() },
		"a list":           func() error { return g.client.RPush(ctx, key, "a", "b").Err() },
		"no version":       func() error { return g.client.HSet(ctx, key, "s", "junk").Err() },
		"a bad version":    func() error { return g.client.HSet(ctx, key, "v", "1.5", "s", "junk").Err() },
		"a huge version":   func() error { return g.client.HSet(ctx, key, "v", "1e300", "s", "junk").Err() },
		"no state":         func() error { return g.client.HSet(ctx, key, "v", "3").Err() },
		"a negative count": func() error { return g.client.HSet(ctx, key, "v", "-2", "s", "junk").Err() },
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, g.client.Del(ctx, key).Err())
			require.NoError(t, set())
			assert.Nil(t, read(t, g, "api"), "read as none")
			require.NoError(t, g.Pace(ctx, "api", func([]byte) []byte { return []byte("new") }))
			assert.Equal(t, []byte("new"), read(t, g, "api"))
			ttl, err := g.client.PTTL(ctx, key).Result()
			require.NoError(t, err)
			assert.Positive(t, ttl, "it expires")
		})
	}
}

// TestPaceFailsOpen: with Redis stopped, Pace returns an error within the
// gate's timeout and runs no update, and a Transport goes on pacing on its
// own copy.
func TestPaceFailsOpen(t *testing.T) {
	s := startRedis(t)
	g := New(s.client(t), WithTimeout(20*time.Millisecond)).(*gate)
	s.stop()
	ran := false
	start := time.Now()
	err := g.Pace(t.Context(), "api", func(b []byte) []byte { ran = true; return b })
	assert.Error(t, err)
	assert.False(t, ran, "nothing read, nothing updated")
	assert.Less(t, time.Since(start), time.Second)
}
