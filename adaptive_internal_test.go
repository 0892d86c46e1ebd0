package heed

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAdaptiveOffUntilThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		for range 1000 {
			assert.Zero(t, a.waitAndSend(time.Now()))
			a.answered(time.Now(), time.Now(), false, 0)
		}
		assert.False(t, a.enabled)
	})
}

func TestAdaptiveThrottleOncePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		sent := time.Now()
		for range 32 {
			a.waitAndSend(sent)
		}
		time.Sleep(100 * time.Millisecond)
		// 32 sends in 0.1s: 320 a second; the burst's 429s lower it once.
		for range 20 {
			a.answered(time.Now(), sent, true, 0)
		}
		assert.True(t, a.enabled)
		assert.InDelta(t, 320*adaptiveBeta, a.fillRate, 1)
		// A throttle of a send made after that lowers it again.
		time.Sleep(10 * time.Millisecond)
		later := time.Now()
		assert.Zero(t, a.waitAndSend(later), "a token came in 10ms")
		time.Sleep(10 * time.Millisecond)
		a.answered(time.Now(), later, true, 0)
		assert.Less(t, a.fillRate, 320*adaptiveBeta)
	})
}

func TestAdaptivePacesAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		start := time.Now()
		for range 10 {
			a.waitAndSend(start)
		}
		time.Sleep(100 * time.Millisecond)
		a.answered(time.Now(), start, true, 0) // 100 a second: paced at 70
		rate := a.fillRate
		assert.InDelta(t, 70, rate, 1)
		// Paced: sends are spaced 1/rate apart once the bucket is empty.
		var waits []time.Duration
		for range 5 {
			w := a.waitAndSend(time.Now())
			for w > 0 {
				waits = append(waits, w)
				time.Sleep(w)
				w = a.waitAndSend(time.Now())
			}
		}
		assert.NotEmpty(t, waits)
		for _, w := range waits {
			assert.LessOrEqual(t, w, time.Duration(float64(time.Second)/rate)+time.Millisecond)
		}
		// Successes grow the rate back past where it was, along the cubic.
		time.Sleep(10 * time.Second)
		a.answered(time.Now(), time.Now(), false, 0)
		assert.Greater(t, a.fillRate, 100.0)
	})
}

func TestAdaptiveFloorIsTheHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		now := time.Now()
		a.waitAndSend(now)
		a.waitAndSend(now)
		time.Sleep(time.Second)
		// Two sends a second, throttled with a 10ms hint: the server lets a
		// single caller send every 10ms, so heed paces no slower.
		a.answered(time.Now(), now, true, 10*time.Millisecond)
		assert.InDelta(t, 100, a.fillRate, 0.01)
		time.Sleep(time.Second)
		a.waitAndSend(time.Now())
		a.answered(time.Now(), time.Now(), true, 0)
		assert.Less(t, a.fillRate, 50.0, "without a hint, the 10ms floor is gone")
		assert.GreaterOrEqual(t, a.fillRate, adaptiveMinRate)
	})
}

func TestAdaptiveLeavesALoneCallerToTheHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		for range 10 {
			sent := time.Now()
			assert.Zero(t, a.waitAndSend(sent))
			time.Sleep(time.Millisecond)
			a.answered(time.Now(), sent, true, 0) // throttled, nothing else in flight
		}
		assert.False(t, a.enabled, "one send at a time makes no herd")
	})
}

// waitAndSend is wait, then sent when the send may go: what a RoundTrip does.
func (a *adaptive) waitAndSend(now time.Time) time.Duration {
	w := a.wait(now)
	if w == 0 {
		a.sent(now)
	}
	return w
}

func TestAdaptiveLeavesLongHintsToTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		sent := time.Now()
		for range 16 {
			a.waitAndSend(sent)
		}
		time.Sleep(10 * time.Millisecond)
		for range 16 {
			a.answered(time.Now(), sent, true, time.Second) // a window's "come back in 1s"
		}
		assert.False(t, a.enabled, "the gate holds the scope until the instant; no pacing below it")
		for range 16 {
			a.waitAndSend(time.Now())
		}
		a.answered(time.Now(), time.Now(), true, 10*time.Millisecond)
		assert.True(t, a.enabled, "a short hint from a herd starts the pacing")
	})
}
