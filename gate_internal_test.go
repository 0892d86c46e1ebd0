package heed

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemGateForgetsPastScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate().(*memGate)
		for i := range 200 {
			require.NoError(t, g.Hold(t.Context(), "scope"+strconv.Itoa(i), time.Now().Add(time.Second)))
		}
		assert.Len(t, g.scopes, 200)
		time.Sleep(2 * time.Second)
		require.NoError(t, g.Hold(t.Context(), "fresh", time.Now().Add(time.Second)))
		assert.Len(t, g.scopes, 1, "scopes whose time has passed are forgotten")
	})
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
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 7, Reset: reset}))
		assert.Equal(t, int64(7-3), g.scopes["s"].avail, "the three in flight may come after")
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 6, Reset: reset}))
		assert.Equal(t, int64(6-2), g.scopes["s"].avail)
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 9, Reset: reset}))
		assert.Equal(t, int64(5), g.scopes["s"].avail, "an older answer was counted already: its send comes back")
		require.NoError(t, g.Done(ctx, "s", &Quota{Remaining: 8, Reset: reset}))
		assert.Equal(t, int64(6), g.scopes["s"].avail, "exactly what the server has left")
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
