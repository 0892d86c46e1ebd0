package heed

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/internal/rules"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemGateForgetsPastScopes: each new scope checks the two scopes
// longest unchecked and forgets those whose time has passed, so that past
// scopes go at a constant cost per new one, never by a scan; up to
// gateKeep scopes are kept whatever their state.
func TestMemGateForgetsPastScopes(t *testing.T) {
	tests := []struct {
		name          string
		past, fresh   int
		wantForgotten int
	}{
		{"2×gateKeep past, as many fresh: every past one forgotten", 2 * gateKeep, 2 * gateKeep, 2 * gateKeep},
		{"3×gateKeep past, gateKeep fresh: two a fresh one", 3 * gateKeep, gateKeep, 2 * gateKeep},
		{"4×gateKeep past, 1000 fresh", 4 * gateKeep, 1000, 2000},
		{"2×gateKeep past, gateKeep/2 fresh", 2 * gateKeep, gateKeep / 2, gateKeep},
		{"gateKeep/2 past, 10 fresh: fewer than gateKeep, all kept", gateKeep / 2, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate().(*memGate)
				for i := range tt.past {
					require.NoError(t, g.Hold(t.Context(), "past"+strconv.Itoa(i), time.Now().Add(time.Second)))
				}
				require.Equal(t, tt.past, len(g.scopes))
				time.Sleep(2 * time.Second)
				for i := range tt.fresh {
					require.NoError(t, g.Hold(t.Context(), "fresh"+strconv.Itoa(i), time.Now().Add(time.Second)))
				}
				assert.Equal(t, tt.past+tt.fresh-tt.wantForgotten, len(g.scopes))
				assert.Equal(t, len(g.scopes), g.order.len(), "every scope queued once")
				for i := range tt.fresh {
					assert.Contains(t, g.scopes, "fresh"+strconv.Itoa(i), "a held scope is kept")
				}
			})
		})
	}
}

func TestMemGateQuotaCountsSendsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		g := NewGate().(*memGate)
		reset := time.Now().Add(time.Second)
		// Four sends go out before any quota is known.
		for range 4 {
			nb, err := g.Take(ctx, "s")
			require.NoError(t, err)
			require.True(t, nb.IsZero())
		}
		// The server served them in order, leaving 9, 8, 7, 6 of 10; the
		// answers arrive out of order.
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 7, Reset: reset}, true))
		assert.Equal(t, int64(7-3), g.scopes["s"].available, "the three in flight may come after")
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 6, Reset: reset}, true))
		assert.Equal(t, int64(6-2), g.scopes["s"].available)
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 9, Reset: reset}, true))
		assert.Equal(t, int64(5), g.scopes["s"].available, "an older answer was counted already: its send comes back")
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 8, Reset: reset}, true))
		assert.Equal(t, int64(6), g.scopes["s"].available, "exactly what the server has left")
		for range 6 {
			nb, _ := g.Take(ctx, "s")
			require.True(t, nb.IsZero())
		}
		nb, _ := g.Take(ctx, "s")
		assert.Equal(t, reset, nb, "the seventh waits for the reset")
		time.Sleep(time.Second)
		nb, _ = g.Take(ctx, "s")
		assert.True(t, nb.IsZero(), "after the reset the quota is unknown again")
	})
}

// TestMemGateRechecksWhileSendsInFlight: a send refused by a spent quota is
// told to ask again soon while sends set against the quota may still give
// theirs back, and to wait for the reset when none may.
func TestMemGateRechecksWhileSendsInFlight(t *testing.T) {
	tests := []struct {
		name    string
		before  int           // sends in flight when the figure, 0 left, arrives
		reset   time.Duration // the figure's reset
		answers int           // of those, answered since without a figure
		recheck bool          // want a recheck, not the reset
	}{
		{"sends in flight", 2, time.Second, 0, true},
		{"one still in flight", 2, time.Second, 1, true},
		{"none in flight", 0, time.Second, 0, false},
		{"all answered", 2, time.Second, 2, false},
		{"reset sooner than a recheck", 2, rules.QuotaRecheck / 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				g := NewGate().(*memGate)
				for range tt.before + 1 {
					nb, err := g.Take(ctx, "s")
					require.NoError(t, err)
					require.True(t, nb.IsZero())
				}
				reset := time.Now().Add(tt.reset)
				require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 0, Reset: reset}, true))
				for range tt.answers {
					require.NoError(t, g.Done(ctx, "s", nil, true))
				}
				want := reset
				if tt.recheck {
					want = time.Now().Add(rules.QuotaRecheck)
				}
				nb, err := g.Take(ctx, "s")
				require.NoError(t, err)
				assert.Equal(t, want, nb)
				nb, err = g.NotBefore(ctx, "s")
				require.NoError(t, err)
				assert.Equal(t, reset, nb, "NotBefore answers the reset")
			})
		})
	}
}

// TestMemGateGivenBackSendGoesBeforeTheReset: a waiter refused while a send
// is in flight is admitted at its recheck once that send, answering with a
// figure that is not lower, gives its send back; not at the reset.
func TestMemGateGivenBackSendGoesBeforeTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		g := NewGate().(*memGate)
		start := time.Now()
		reset := start.Add(time.Second)
		for range 2 {
			nb, err := g.Take(ctx, "s")
			require.NoError(t, err)
			require.True(t, nb.IsZero())
		}
		// The server served the two in order, leaving 2 then 1; the second
		// answers first, and the first is set against its figure.
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 1, Reset: reset}, true))
		admitted := make(chan time.Time, 1)
		go func() {
			for {
				nb, err := g.Take(ctx, "s")
				if !assert.NoError(t, err) || nb.IsZero() {
					admitted <- time.Now()
					return
				}
				time.Sleep(time.Until(nb))
			}
		}()
		time.Sleep(3 * time.Millisecond)
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 2, Reset: reset}, true))
		assert.Equal(t, start.Add(rules.QuotaRecheck), <-admitted, "admitted at the first recheck after the send came back")
	})
}
