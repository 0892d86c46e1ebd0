package heed

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// learnCeiling puts a's learned cap on: three sends in flight, the third
// refused with no hint after refusalTook.
func learnCeiling(t *testing.T, a *adaptive, s time.Time, refusalTook time.Duration) {
	a.sent(s)
	a.sent(s)
	level := a.sent(s)
	require.True(t, a.answered(s.Add(refusalTook), s, level, true, 0, -1), "the cap takes the refusal")
}

func TestCeilingOffAdmitsALateWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		s := time.Now()
		learnCeiling(t, &a, s, 600*time.Millisecond)
		// Served after a second: the refusal took more than half of that,
		// so the cap turns itself off.
		a.answered(s.Add(time.Second), s, 1, false, 0, -1)
		a.answered(s.Add(time.Second), s, 2, false, 0, -1)
		require.False(t, a.ceil.on.Load())
		// A send that saw the cap on a moment before asks for a slot.
		start := time.Now()
		got, err := a.ceil.acquire(t.Context(), 300*time.Millisecond)
		require.NoError(t, err)
		assert.True(t, got, "a cap that is off admits at once")
		assert.Zero(t, time.Since(start))
	})
}

func TestCeilingOffLetsTheLineGoAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		s := time.Now()
		learnCeiling(t, &a, s, 10*time.Millisecond)
		a.ceil.mu.Lock()
		a.ceil.took = time.Second
		a.ceil.mu.Unlock()
		const n = 20
		done := make(chan bool, n)
		for range n {
			go func() { got, _ := a.ceil.acquire(t.Context(), 0); done <- got }()
		}
		synctest.Wait()
		a.ceil.mu.Lock()
		require.Len(t, a.ceil.line, n)
		a.ceil.slowest = time.Hour // the next served answer turns it off
		a.ceil.mu.Unlock()
		a.answered(time.Now(), time.Now(), 1, false, 0, -1)
		for range n {
			assert.True(t, <-done)
			assert.Zero(t, a.ceil.spacing(time.Now()), "no spacing once the cap is off")
		}
	})
}

// TestCeilingJudgesARefusalByTheLevelsServed: a refusal with no hint at a
// level at or within one of the highest served lately is the cap's, even
// below a cap that has grown past the server's, so that the cap falls to
// it; one further below both is the rate's. (Sends at the top served
// level judged the rate's drove the rate to its floor, 513 of 600 sends
// deferred, in 2 to 5 % of runs of TestPacingToAConcurrencyLimit.)
func TestCeilingJudgesARefusalByTheLevelsServed(t *testing.T) {
	for _, tt := range []struct {
		name       string
		limit, top int64
		level      int64
		capped     bool
		limitAfter int64
	}{
		{"at the top served, below a cap grown past it", 22, 17, 17, true, 16},
		{"one below the top served", 22, 17, 16, true, 15},
		{"above the top served", 22, 17, 19, true, 18},
		{"two below the top served, far below the cap", 22, 17, 15, false, 22},
		{"far below both", 22, 17, 5, false, 22},
		{"at the cap", 8, 12, 8, true, 7},
		{"one below the cap", 8, 12, 7, true, 6},
		{"two below the cap, at a level served", 8, 12, 6, false, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			var inflight flight
			c := &ceiling{limit: tt.limit, took: 20 * time.Millisecond, top: tt.top, topSecond: now.Unix(), moved: now.Add(-time.Second), inflight: &inflight}
			c.on.Store(true)
			got := c.refused(tt.level, now, now, &inflight)
			assert.Equal(t, tt.capped, got)
			assert.Equal(t, tt.limitAfter, c.limit)
		})
	}
}
