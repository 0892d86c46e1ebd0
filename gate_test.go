package heed_test

import (
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
