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
		assert.Len(t, g.until, 200)
		time.Sleep(2 * time.Second)
		require.NoError(t, g.Hold(t.Context(), "fresh", time.Now().Add(time.Second)))
		assert.Len(t, g.until, 1, "scopes whose time has passed are forgotten")
	})
}
