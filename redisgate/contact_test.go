package redisgate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// contactGates returns n gates of one fleet, as of n processes, on a clock
// the test moves.
func contactGates(t *testing.T, s *redisServer, n int, clock *time.Time, opts ...Option) []*gate {
	gs := make([]*gate, n)
	for i := range gs {
		gs[i] = newGate(t, s, opts...)
		gs[i].now = func() time.Time { return *clock }
		neverMeasure(gs[i])
	}
	return gs
}

// TestFirstContactAdmitsAFewAtOnce: for its span from the fleet's first
// send, a scope admits at most the first contact's sends in flight across
// every process; a refused send asks again a recheck later; an answer
// gives its place to the next; after the span, every send is admitted.
func TestFirstContactAdmitsAFewAtOnce(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name string
		most int
		span time.Duration
		opts []Option
	}{
		{"default", DefaultContactInFlight, DefaultContactSpan, nil},
		{"one for 100ms", 1, 100 * time.Millisecond, []Option{WithFirstContact(1, 100*time.Millisecond)}},
		{"two for a second", 2, time.Second, []Option{WithFirstContact(2, time.Second)}},
		{"eight for 250ms", 8, 250 * time.Millisecond, []Option{WithFirstContact(8, 250*time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Now().Truncate(time.Millisecond)
			start := clock
			gs := contactGates(t, s, 3, &clock, append([]Option{WithPrefix("contact:" + tt.name + ":")}, tt.opts...)...)
			ctx := t.Context()
			for i := range tt.most {
				at, err := gs[i%len(gs)].Take(ctx, "s")
				require.NoError(t, err)
				require.True(t, at.IsZero(), "send %d of %d is admitted", i+1, tt.most)
			}
			for _, g := range gs {
				at, err := g.Take(ctx, "s")
				require.NoError(t, err)
				assert.Equal(t, clock.Add(rules.QuotaRecheck).UnixMilli(), at.UnixMilli(), "one more, from any process, asks again a recheck later")
				nb, err := g.NotBefore(ctx, "s")
				require.NoError(t, err)
				assert.False(t, nb.After(clock), "and no hold is set")
			}
			clock = start.Add(tt.span / 2)
			require.NoError(t, gs[0].Done(ctx, "s", nil, true))
			at, err := gs[1].Take(ctx, "s")
			require.NoError(t, err)
			assert.True(t, at.IsZero(), "an answer gives its place to another process's send")
			at, err = gs[2].Take(ctx, "s")
			require.NoError(t, err)
			assert.False(t, at.IsZero(), "and to one only")

			clock = start.Add(tt.span)
			for i := range 3 * tt.most {
				at, err := gs[i%len(gs)].Take(ctx, "s")
				require.NoError(t, err)
				require.True(t, at.IsZero(), "after the span, send %d is admitted", i+1)
			}
		})
	}
}

// TestFirstContactIsOnceAWhile: the contact begins at the fleet's first
// send and is remembered contactKeep from the last; a published quota
// admits by itself; a gate with it off, or a contact key that is not a
// time, cap nothing or begin a contact now.
func TestFirstContactIsOnceAWhile(t *testing.T) {
	s := startRedis(t)
	ctx := t.Context()
	admitted := func(g *gate, n int) int {
		got := 0
		for range n {
			at, err := g.Take(ctx, "s")
			require.NoError(t, err)
			if at.IsZero() {
				got++
			}
		}
		return got
	}
	t.Run("remembered from the last send", func(t *testing.T) {
		clock := time.Now().Truncate(time.Millisecond)
		g := contactGates(t, s, 1, &clock, WithPrefix("once:"))[0]
		assert.Equal(t, DefaultContactInFlight, admitted(g, 10))
		ttl, err := g.client.PTTL(ctx, g.contactKey("s")).Result()
		require.NoError(t, err)
		assert.InDelta(t, contactKeep.Seconds(), ttl.Seconds(), 5, "kept contactKeep from the last send")
		clock = clock.Add(DefaultContactSpan)
		assert.Equal(t, 10, admitted(g, 10), "over after its span")
		require.NoError(t, g.client.Del(ctx, g.contactKey("s")).Err()) // as expiry does
		assert.Equal(t, 0, admitted(g, 1), "forgotten, with its sends still in flight, the next send meets the scope again")
	})
	t.Run("a published quota admits by itself", func(t *testing.T) {
		clock := time.Now().Truncate(time.Millisecond)
		g := contactGates(t, s, 1, &clock, WithPrefix("quota:"))[0]
		require.Equal(t, 1, admitted(g, 1))
		require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 20, Reset: clock.Add(time.Minute)}, true))
		assert.Equal(t, 20, admitted(g, 25))
	})
	t.Run("off", func(t *testing.T) {
		for _, o := range []Option{WithFirstContact(0, time.Second), WithFirstContact(4, 0), WithFirstContact(-1, -1)} {
			clock := time.Now().Truncate(time.Millisecond)
			g := contactGates(t, s, 1, &clock, WithPrefix("off:"), o)[0]
			assert.Equal(t, 12, admitted(g, 12))
			require.NoError(t, g.client.FlushAll(ctx).Err())
		}
	})
	t.Run("a key that is not a string", func(t *testing.T) {
		clock := time.Now().Truncate(time.Millisecond)
		g := contactGates(t, s, 1, &clock, WithPrefix("hash:"))[0]
		require.NoError(t, g.client.HSet(ctx, g.contactKey("s"), "x", 1).Err())
		assert.Equal(t, DefaultContactInFlight, admitted(g, 10), "a contact from now")
		since, err := g.client.Get(ctx, g.contactKey("s")).Int64()
		require.NoError(t, err, "replaced")
		assert.Equal(t, g.nowToRedis(clock.UnixMilli()), since)
		require.NoError(t, g.client.FlushAll(ctx).Err())
	})
	t.Run("a start ahead of now, or older than the horizon", func(t *testing.T) {
		tests := []struct {
			name  string
			start func(now int64) int64
			want  int   // admitted of 10
			since int64 // rewritten, from now
		}{
			{"an hour ahead", func(now int64) int64 { return now + time.Hour.Milliseconds() }, DefaultContactInFlight, 0},
			{"a millisecond ahead", func(now int64) int64 { return now + 1 }, DefaultContactInFlight, 0},
			{"past the horizon", func(now int64) int64 { return now - Horizon.Milliseconds() - 1 }, 10, -DefaultContactSpan.Milliseconds()},
		}
		for _, tt := range tests {
			clock := time.Now().Truncate(time.Millisecond)
			g := contactGates(t, s, 1, &clock, WithPrefix("ahead:"))[0]
			now := g.nowToRedis(clock.UnixMilli())
			require.NoError(t, g.client.Set(ctx, g.contactKey("s"), tt.start(now), 0).Err())
			assert.Equal(t, tt.want, admitted(g, 10), tt.name)
			since, err := g.client.Get(ctx, g.contactKey("s")).Int64()
			require.NoError(t, err)
			assert.Equal(t, now+tt.since, since, tt.name)
			require.NoError(t, g.client.FlushAll(ctx).Err())
		}
	})
	t.Run("a take under a quota keeps it", func(t *testing.T) {
		clock := time.Now().Truncate(time.Millisecond)
		g := contactGates(t, s, 1, &clock, WithPrefix("kept:"))[0]
		require.Equal(t, 1, admitted(g, 1))
		require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 5, Reset: clock.Add(time.Minute)}, true))
		require.NoError(t, g.client.PExpire(ctx, g.contactKey("s"), time.Second).Err())
		assert.Equal(t, 5, admitted(g, 5))
		ttl, err := g.client.PTTL(ctx, g.contactKey("s")).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Minute, "refreshed")
		require.NoError(t, g.client.FlushAll(ctx).Err())
	})
	t.Run("a key that is not a time", func(t *testing.T) {
		for _, v := range []string{"x", "1.5", "-1", "99999999999999999999", ""} {
			clock := time.Now().Truncate(time.Millisecond)
			g := contactGates(t, s, 1, &clock, WithPrefix("bad:"))[0]
			require.NoError(t, g.client.Set(ctx, g.contactKey("s"), v, 0).Err())
			assert.Equal(t, DefaultContactInFlight, admitted(g, 10), "%q: a contact from now", v)
			since, err := g.client.Get(ctx, g.contactKey("s")).Int64()
			require.NoError(t, err)
			assert.Equal(t, g.nowToRedis(clock.UnixMilli()), since, "%q: rewritten", v)
			require.NoError(t, g.client.FlushAll(ctx).Err())
		}
	})
}

// TestFirstContactThroughTransports: processes of a fleet, each a heed
// Transport with many goroutines, start together on a scope new to the
// gate; the server sees at most the first contact's sends in flight for
// its span, and every send after it at once.
func TestFirstContactThroughTransports(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		most      int
		span      time.Duration
		processes int
	}{
		{4, 300 * time.Millisecond, 4},
		{2, 200 * time.Millisecond, 3},
		{6, 150 * time.Millisecond, 2},
	}
	for _, tt := range tests {
		t.Run("", func(t *testing.T) {
			const each = 8 // goroutines a process
			// Each arrival, with the sends in flight at the server then,
			// itself included; judged once the contact's start is read.
			type arrival struct {
				at    time.Time
				level int
			}
			var mu sync.Mutex
			var out int
			var arrivals []arrival
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				out++
				arrivals = append(arrivals, arrival{time.Now(), out})
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				out--
				mu.Unlock()
			}))
			defer srv.Close()
			prefix := "fleet:" + t.Name() + ":"
			var wg sync.WaitGroup
			for range tt.processes {
				g := New(s.client(t), patient, WithPrefix(prefix), WithFirstContact(tt.most, tt.span))
				tr := &http.Transport{}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: heed.New(tr, heed.WithGate(g))}
				for range each {
					wg.Go(func() {
						for range 4 {
							resp, err := c.Get(srv.URL)
							if assert.NoError(t, err) {
								resp.Body.Close()
								assert.Equal(t, http.StatusOK, resp.StatusCode)
							}
						}
					})
				}
			}
			wg.Wait()
			// The contact began when the gate says (its key holds the
			// start, in Unix milliseconds), which may be well before the
			// server's first arrival when the first send is slow to dial.
			// Sends let go as it ends may overlap the last it admitted:
			// the span's last 50 ms are not judged.
			ctx, rc := context.Background(), s.client(t)
			keys, err := rc.Keys(ctx, prefix+"*:contact").Result()
			require.NoError(t, err)
			require.Len(t, keys, 1)
			since, err := rc.Get(ctx, keys[0]).Int64()
			require.NoError(t, err)
			start := time.UnixMilli(since)
			var most, early, after int
			mu.Lock()
			defer mu.Unlock()
			for _, a := range arrivals {
				if a.at.Before(start.Add(tt.span - 50*time.Millisecond)) {
					most = max(most, a.level)
					early++
				} else {
					after = max(after, a.level)
				}
			}
			assert.LessOrEqual(t, most, tt.most, "in flight during the first contact")
			assert.Positive(t, early, "sends went during it")
			assert.Greater(t, after, tt.most, "and more at once after it")
		})
	}
}
