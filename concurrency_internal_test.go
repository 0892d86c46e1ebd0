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
	require.True(t, a.answered(s.Add(refusalTook), s, level, true, 0), "the cap takes the refusal")
}

func TestCeilingOffAdmitsALateWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		s := time.Now()
		learnCeiling(t, &a, s, 600*time.Millisecond)
		// Served after a second: the refusal took more than half of that,
		// so the cap turns itself off.
		a.answered(s.Add(time.Second), s, 1, false, 0)
		a.answered(s.Add(time.Second), s, 2, false, 0)
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
		a.answered(time.Now(), time.Now(), 1, false, 0)
		for range n {
			assert.True(t, <-done)
			assert.Zero(t, a.ceil.spacing(time.Now()), "no spacing once the cap is off")
		}
	})
}
