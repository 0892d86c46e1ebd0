package heed

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/internal/rules"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// burst takes n sends of scope now, all of which the gate must admit, and
// returns their episodes.
func burst(t *testing.T, g *memGate, n int) []int64 {
	t.Helper()
	eps := make([]int64, n)
	for i := range eps {
		nb, ep := g.take("s", time.Now())
		require.True(t, nb.IsZero(), "send %d of %d admitted", i+1, n)
		eps[i] = ep
	}
	return eps
}

// answer answers the sends of eps: the first served are served, the rest
// throttled, each with a hold of hint from now, as a Transport does.
func answer(t *testing.T, g *memGate, eps []int64, served int, hint time.Duration) {
	t.Helper()
	for i, ep := range eps {
		now := time.Now()
		g.done("s", nil, i < served, ep, now)
		if i >= served {
			require.NoError(t, g.Hold(t.Context(), "s", now.Add(hint)))
		}
	}
}

// throttledWindow is one window of a fixed-window server of capacity
// served seen by a herd: n sends go at once, served are served, and the
// rest are throttled 10ms later with a hint of a second, after which the
// test sleeps until the hold's end, the next reopen.
func throttledWindow(t *testing.T, g *memGate, n, served int) {
	t.Helper()
	eps := burst(t, g, n)
	time.Sleep(10 * time.Millisecond)
	answer(t, g, eps, served, time.Second)
	sleepToHold(t, g)
}

func sleepToHold(t *testing.T, g *memGate) {
	t.Helper()
	nb, err := g.NotBefore(t.Context(), "s")
	require.NoError(t, err)
	time.Sleep(time.Until(nb))
}

// capped takes sends until the gate refuses one and returns how many it
// admitted, and the time it refused until.
func capped(g *memGate, most int) (int, time.Time) {
	for n := range most {
		if nb, _ := g.take("s", time.Now()); !nb.IsZero() {
			return n, nb
		}
	}
	return most, time.Time{}
}

// serveAll answers n sends of the current episode, served.
func serveAll(g *memGate, n int) {
	for range n {
		g.done("s", nil, true, g.scopes["s"].episode, time.Now())
	}
}

// learn runs the two throttled windows that teach g a capacity of 40: the
// first episode runs from the first send, the second from the first
// window's reopen, and they agree. It returns the last reopen.
func learn(t *testing.T, g *memGate) time.Time {
	t.Helper()
	for range 2 {
		throttledWindow(t, g, 45, 40)
	}
	return time.Now()
}

func TestInferredQuotaLearnsAfterTwoStableEpisodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		throttledWindow(t, g, 45, 40) // one episode: not enough
		n, _ := capped(g, 45)
		assert.Equal(t, 45, n, "one episode teaches nothing")
	})
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		reopen := learn(t, g)
		n, until := capped(g, 45)
		assert.Equal(t, 40, n, "at most S sends from the reopen")
		s := g.scopes["s"]
		assert.Equal(t, int64(40), s.capacity)
		period := s.period
		assert.Equal(t, time.Second+10*time.Millisecond, period, "reopens a hint after the throttle, 10ms after the last")
		assert.Equal(t, reopen.Add(period), until, "the rest held until reopen + P")
		nb, _ := g.take("s", until.Add(-time.Millisecond))
		assert.Equal(t, until, nb, "still held just before")

		time.Sleep(time.Until(until))
		n, next := capped(g, 45)
		assert.Equal(t, 40, n, "the next predicted window admits S again")
		assert.Equal(t, until.Add(period), next)
	})
}

func TestInferredQuotaCountsLateAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		for range 2 {
			eps := burst(t, g, 45)
			time.Sleep(10 * time.Millisecond)
			// The throttled answers come first and hold the scope; the
			// served ones of the same episode after: they count all the
			// same.
			answer(t, g, eps[40:], 0, time.Second)
			time.Sleep(5 * time.Millisecond)
			answer(t, g, eps[:40], 40, 0)
			sleepToHold(t, g)
		}
		n, _ := capped(g, 45)
		assert.Equal(t, 40, n, "the order of answers and holds does not bias S")
	})
}

func TestInferredQuotaRelearnsOnThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		learn(t, g)
		// The capacity fell to 30: a capped window is throttled after 30.
		eps := burst(t, g, 40)
		time.Sleep(10 * time.Millisecond)
		answer(t, g, eps, 30, time.Second)
		sleepToHold(t, g)
		// S is forgotten at the reopen: the window admits all 45.
		throttledWindow(t, g, 45, 30)
		n, _ := capped(g, 45)
		assert.Equal(t, 30, n, "two episodes of 30 agree: S is 30")
	})
}

func TestInferredQuotaKeepsSWhenThrottledAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		learn(t, g)
		// A window served its 40 and one more send, from elsewhere, drew
		// a 429: S stands, and the hold's end is the next reopen.
		eps := burst(t, g, 40)
		time.Sleep(10 * time.Millisecond)
		answer(t, g, eps, 40, 0)
		require.NoError(t, g.Hold(t.Context(), "s", time.Now().Add(time.Second)))
		sleepToHold(t, g)
		reopen := time.Now()
		n, until := capped(g, 45)
		assert.Equal(t, 40, n)
		assert.Equal(t, reopen.Add(g.scopes["s"].period), until)
	})
}

func TestInferredQuotaProbeRaisesS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		learn(t, g)
		for w := 1; w <= rules.InferProbe; w++ {
			n, until := capped(g, 45)
			want := 40
			if w == rules.InferProbe {
				want = 41
			}
			require.Equal(t, want, n, "predicted window %d", w)
			serveAll(g, n) // the server has room for 41
			time.Sleep(time.Until(until))
		}
		n, _ := capped(g, 45)
		assert.Equal(t, 41+2, n, "the probe was served: S is 41, and the next window probes twice as far")
		assert.Equal(t, int64(41), g.scopes["s"].capacity)
		// The server has room for 42: the 43rd is throttled.
		time.Sleep(10 * time.Millisecond)
		serveAll(g, 42)
		require.NoError(t, g.Hold(t.Context(), "s", time.Now().Add(time.Second)))
		sleepToHold(t, g)
		n, _ = capped(g, 45)
		assert.Equal(t, 42, n, "S is what the window served, and the probes stop")
	})
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		learn(t, g)
		for w := 1; w < rules.InferProbe; w++ {
			n, until := capped(g, 45)
			require.Equal(t, 40, n)
			serveAll(g, n)
			time.Sleep(time.Until(until))
		}
		// The probe is refused: S stands.
		eps := burst(t, g, 41)
		time.Sleep(10 * time.Millisecond)
		answer(t, g, eps, 40, time.Second)
		sleepToHold(t, g)
		n, _ := capped(g, 45)
		assert.Equal(t, 40, n, "the probe was refused: S stands")
	})
}

func TestInferredQuotaNeverBeforeServerTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		reopen := learn(t, g)
		n, until := capped(g, 45)
		require.Equal(t, 40, n)
		// A hold given by the server past the predicted window wins.
		late := reopen.Add(3 * time.Second)
		require.NoError(t, g.Hold(t.Context(), "s", late))
		for _, at := range []time.Time{reopen, until, late.Add(-time.Millisecond)} {
			time.Sleep(time.Until(at))
			nb, _ := g.take("s", time.Now())
			assert.Equal(t, late, nb, "at %v", at.Sub(reopen))
		}
	})
}

func TestInferredQuotaOffWhenNotSaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		// Throttled windows that served different counts: not one window.
		for _, served := range []int{40, 35, 40, 38} {
			throttledWindow(t, g, 45, served)
		}
		assert.Zero(t, g.scopes["s"].capacity)
		n, _ := capped(g, 60)
		assert.Equal(t, 60, n)
	})
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		// Hints under a second are the adaptive limiter's.
		for range 4 {
			eps := burst(t, g, 12)
			time.Sleep(10 * time.Millisecond)
			answer(t, g, eps, 10, 500*time.Millisecond)
			sleepToHold(t, g)
		}
		assert.Zero(t, g.scopes["s"].capacity)
	})
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		learn(t, g)
		// A predicted window that does not use its S sends forgets S.
		burst(t, g, 20)
		require.Equal(t, int64(40), g.scopes["s"].capacity)
		time.Sleep(g.scopes["s"].period + 10*time.Millisecond)
		n, _ := capped(g, 60)
		assert.Equal(t, 60, n, "not saturated: nothing capped")
		assert.Zero(t, g.scopes["s"].capacity)
	})
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		reopen := learn(t, g)
		// Idle for a whole window.
		time.Sleep(time.Until(reopen.Add(3 * time.Second)))
		n, _ := capped(g, 60)
		assert.Equal(t, 60, n)
	})
}

func TestInferredQuotaOffSwitch(t *testing.T) {
	for name, g := range map[string]Gate{
		"off":     NewGate(WithInferredQuota(false)),
		"default": NewGate(),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := g.(*memGate)
				learn(t, g)
				n, _ := capped(g, 60)
				assert.Equal(t, 60, n)
				assert.Zero(t, g.scopes["s"].capacity)
			})
		})
	}
}

func TestInferredQuotaYieldsToPublishedQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		learn(t, g)
		eps := burst(t, g, 1)
		g.done("s", &Quota{Remaining: 50, Reset: time.Now().Add(time.Second)}, true, eps[0], time.Now())
		n, _ := capped(g, 60)
		assert.Equal(t, 50, n, "the published quota counts, not S")
	})
}

func TestInferredQuotaForgetsAfterIdleWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		// Two throttled windows of a server that serves one send a window
		// agree: S is 1, P 1.01s, and the last reopen is now.
		for range 2 {
			throttledWindow(t, g, 2, 1)
		}
		// Idle past the next predicted window, then a burst: a scope idle
		// for a whole window forgets S, whether S is 1 or more.
		time.Sleep(1500 * time.Millisecond)
		n, until := capped(g, 5)
		assert.Equal(t, 5, n, "held until %v", until)
	})
}

func TestInferredQuotaAgreeDoesNotOverflow(t *testing.T) {
	const year = 365 * 24 * time.Hour
	// 20 times the difference of these periods overflows a Duration.
	assert.False(t, agree(3, 15*year, 3, time.Second))
	assert.False(t, agree(3, time.Second, 3, 15*year))
	assert.True(t, agree(3, 15*year, 3, 15*year+year/40))
	assert.False(t, agree(3, 15*year, 3, 17*year))
}

// TestInferredQuotaIgnoresClientRhythm: a client that sends a burst every
// 10s, each throttled at once with a hint of 1.5s, shows episodes that
// agree, 10 served every 10s; but each throttle comes 8.5s after its
// reopen, so its rhythm is its own, not the server's window, and nothing
// is learned: when its load grows, its sends do not wait 10s.
func TestInferredQuotaIgnoresClientRhythm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		// A long request of the scope, in flight throughout, keeps the
		// scope busy between the bursts.
		long := burst(t, g, 1)
		for range 4 {
			eps := burst(t, g, 12)
			time.Sleep(10 * time.Millisecond)
			answer(t, g, eps, 10, 1500*time.Millisecond)
			time.Sleep(10*time.Second - 10*time.Millisecond)
		}
		assert.Zero(t, g.scopes["s"].capacity, "no S learned from the client's rhythm")
		n, until := capped(g, 20)
		assert.Equal(t, 20, n, "a grown burst is not held, until %v", until)
		answer(t, g, long, 1, 0)
	})
}

// lateWindow takes n sends at once, serves served of them 10ms later, and
// throttles the rest at after the sends, with a hint of hint, then sleeps
// until the hold's end.
func lateWindow(t *testing.T, g *memGate, n, served int, at, hint time.Duration) {
	t.Helper()
	eps := burst(t, g, n)
	time.Sleep(10 * time.Millisecond)
	answer(t, g, eps[:served], served, 0)
	time.Sleep(at - 10*time.Millisecond)
	answer(t, g, eps[served:], 0, hint)
	sleepToHold(t, g)
}

// TestInferredQuotaIgnoresShortHintsOverASecond: hints of 500ms, each
// 600ms into an episode, give periods of 1.1s that agree; but the holds
// explain less than half of them. Such hints are the adaptive limiter's.
func TestInferredQuotaIgnoresShortHintsOverASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		for range 4 {
			lateWindow(t, g, 12, 10, 600*time.Millisecond, 500*time.Millisecond)
		}
		assert.Zero(t, g.scopes["s"].capacity)
		n, _ := capped(g, 20)
		assert.Equal(t, 20, n)
	})
}

// TestInferredQuotaThrottleByHalfThePeriod: an episode counts when its
// throttle came no later than halfway through its period, so that the
// server's hold is at least the other half.
func TestInferredQuotaThrottleByHalfThePeriod(t *testing.T) {
	// window runs two episodes of 1.5s whose 429 comes at into them: 12
	// sends at each reopen, 10 served, 2 throttled with a hint to 1.5s.
	window := func(t *testing.T, at time.Duration) *memGate {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		for range 2 {
			lateWindow(t, g, 12, 10, at, 1500*time.Millisecond-at)
		}
		return g
	}
	synctest.Test(t, func(t *testing.T) {
		g := window(t, 750*time.Millisecond)
		n, _ := capped(g, 20)
		assert.Equal(t, 10, n, "a hold of half the period: learned")
	})
	synctest.Test(t, func(t *testing.T) {
		g := window(t, 751*time.Millisecond)
		n, _ := capped(g, 20)
		assert.Equal(t, 20, n, "a hold of less than half: not learned")
	})
}

// TestInferredQuotaCheckOnlyLearns: whether a hold explains its episode
// decides what is learned, not whether a learned S stands. A late throttle
// below S still forgets S, and that episode is no measurement: the next,
// though it served as many over as long a period, does not agree with it.
func TestInferredQuotaCheckOnlyLearns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(WithInferredQuota(true)).(*memGate)
		learn(t, g)
		// The predicted window serves 30, and a 31st send is throttled
		// 600ms after the reopen with a hint of 500ms.
		lateWindow(t, g, 31, 30, 600*time.Millisecond, 500*time.Millisecond)
		n, _ := capped(g, 45)
		assert.Equal(t, 45, n, "a throttle below S forgets S, however late")
		// This window serves 30 and is throttled 10ms in with a hint of
		// 1.09s: 30 over 1.1s, as the late one.
		time.Sleep(10 * time.Millisecond)
		ep := g.scopes["s"].episode
		for i := range 45 {
			g.done("s", nil, i < 30, ep, time.Now())
		}
		require.NoError(t, g.Hold(t.Context(), "s", time.Now().Add(1090*time.Millisecond)))
		sleepToHold(t, g)
		n, _ = capped(g, 45)
		assert.Equal(t, 45, n, "an episode that agrees with a late one learns nothing")
		assert.Zero(t, g.scopes["s"].capacity)
	})
}

// TestInferredQuotaLearnsNothingWhileThePaceIsShared: a token bucket that
// rounds its wait up to whole seconds looks like a window for two
// episodes. Where a herd paces the scope through the gate, the pace's
// release tells the two apart, so the gate learns no window from them, at
// any burst or hint; without a shared pace it does (the other tests).
func TestInferredQuotaLearnsNothingWhileThePaceIsShared(t *testing.T) {
	for _, tc := range []struct {
		burst int
		hint  time.Duration
	}{{6, time.Second}, {10, time.Second}, {40, time.Second}, {10, 2 * time.Second}} {
		t.Run(fmt.Sprintf("burst %d, hint %v", tc.burst, tc.hint), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate(WithInferredQuota(true)).(*memGate)
				for i := range 3 {
					eps := burst(t, g, tc.burst+5)
					if i == 0 {
						require.NoError(t, g.Pace(t.Context(), "s", func([]byte) []byte { return []byte("a pace") }))
					}
					time.Sleep(10 * time.Millisecond)
					answer(t, g, eps, tc.burst, tc.hint)
					sleepToHold(t, g)
				}
				n, _ := capped(g, 3*tc.burst)
				assert.Equal(t, 3*tc.burst, n, "nothing capped")
				assert.Zero(t, g.scopes["s"].capacity)
			})
		})
	}
}
