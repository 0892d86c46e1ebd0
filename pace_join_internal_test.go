package heed

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// newShared is a limiter whose scope shares heed's own gate.
func newShared() *adaptive {
	return &adaptive{shared: &sharedPace{gate: NewGate().(PaceGate), scope: "s"}}
}

// TestJoinCountsTheStartersServedSendsOnce: a Transport that joined the
// gate's pace at a hold found elsewhere, and then starts the pace with a
// throttle of its own, counts each of its served sends once in the burst.
func TestJoinCountsTheStartersServedSendsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newShared()
		served := 0
		// a herd of two, served
		s := time.Now()
		a.sent(s)
		a.sent(s)
		time.Sleep(10 * time.Millisecond)
		a.answered(time.Now(), s, 2, false, 0, -1)
		a.answered(time.Now(), s, 1, false, 0, -1)
		served += 2
		a.heldElsewhere(time.Now(), 2*time.Second, true)
		if !a.joined {
			t.Fatal("not joined")
		}
		for range 3 {
			s := time.Now()
			a.sent(s)
			time.Sleep(10 * time.Millisecond)
			a.answered(time.Now(), s, 1, false, 0, -1)
			served++
		}
		s = time.Now()
		a.sent(s)
		a.sent(s)
		time.Sleep(10 * time.Millisecond)
		a.answered(time.Now(), s, 2, true, time.Second, -1)
		t.Logf("served %d, burst %v epServed %v", served, a.rel.burst, a.rel.epServed)
		assert.Equal(t, float64(served), a.rel.burst)
	})
}

// failGate: runs update but stores nothing and fails, while fail is set.
type failGate struct {
	*memGate
	fail, run bool
}

func (g *failGate) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	if !g.fail {
		return g.memGate.Pace(ctx, scope, update)
	}
	if g.run {
		_ = g.memGate.Pace(ctx, scope, func(b []byte) []byte { update(b); return b })
	}
	return errors.New("down")
}

// TestAFailedJoinKeepsTheTransportsTokens: a join the gate fails, whether
// it ran the update or not, leaves the Transport unjoined, pacing alone
// with its own tokens, which keep their waits.
func TestAFailedJoinKeepsTheTransportsTokens(t *testing.T) {
	for _, run := range []bool{false, true} {
		t.Run(map[bool]string{false: "not run", true: "ran, unstored"}[run], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := &failGate{memGate: NewGate().(*memGate)}
				// The gate's pace: another Transport's, on, few tokens issued.
				b := &adaptive{shared: &sharedPace{gate: g, scope: "s"}}
				s := time.Now()
				b.sent(s)
				b.sent(s)
				time.Sleep(10 * time.Millisecond)
				b.answered(time.Now(), s, 2, true, time.Second, -1)
				if !b.enabled || !b.joined {
					t.Fatal("b not paced")
				}
				// a: its own cubic pace, many tokens issued, some waiting.
				a := &adaptive{shared: &sharedPace{gate: g, scope: "s"}}
				for range 400 {
					s := time.Now()
					a.sent(s)
					a.answered(time.Now(), s, 1, false, 0, -1)
					time.Sleep(2 * time.Millisecond)
				}
				s = time.Now()
				a.sent(s)
				a.sent(s)
				time.Sleep(10 * time.Millisecond)
				a.answered(time.Now(), s, 2, true, 500*time.Millisecond, -1)
				a.answered(time.Now(), s, 1, false, 0, -1)
				for range 300 {
					k, _ := a.reserve(time.Now())
					a.cancel(k)
				}
				var toks []token
				for range 5 {
					k, _ := a.reserve(time.Now())
					toks = append(toks, k)
				}
				last := toks[len(toks)-1]
				before := a.due(&last, time.Now())
				t.Logf("own: issued %v granted %v; token %v wait %v", a.issued, a.granted, last, before)
				g.fail, g.run = true, run
				s = time.Now()
				a.sent(s)
				a.sent(s)
				time.Sleep(10 * time.Millisecond)
				a.answered(time.Now(), s, 2, true, time.Second, -1)
				g.fail = false
				time.Sleep(1500 * time.Millisecond) // past paceRetry
				k := toks[len(toks)-1]
				w := a.due(&k, time.Now())
				t.Logf("after failed join: joined %v gen %v, gate issued %v granted %v; token %v wait %v", a.joined, a.gen, a.issued, a.granted, k, w)
				assert.False(t, a.joined, "not joined")
				assert.LessOrEqual(t, w, before, "a waiting send keeps its wait")
			})
		})
	}
}

// TestUnsentSendsAreNotServed: a send deferred before a byte of it was
// written (level 0) is not counted as served in the next burst.
func TestUnsentSendsAreNotServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		// on: a cubic pace from a short hint
		s := time.Now()
		a.sent(s)
		a.sent(s)
		time.Sleep(10 * time.Millisecond)
		a.answered(time.Now(), s, 2, true, 500*time.Millisecond, -1)
		a.answered(time.Now(), s, 1, false, 0, -1)
		time.Sleep(2 * time.Second)
		for range 5 {
			s := time.Now()
			a.sent(s)
			a.release(s, 0, -1) // deferred, unsent
		}
		s = time.Now()
		a.sent(s)
		a.sent(s)
		time.Sleep(10 * time.Millisecond)
		a.answered(time.Now(), s, 2, true, time.Second, -1)
		a.answered(time.Now(), s, 1, false, 0, -1)
		t.Logf("ring %d, burst %v", len(a.recent), a.rel.burst)
		assert.Len(t, a.recent, 2, "the two served sends, not the five unsent")
	})
}

// TestAFirstJoinerKeepsItsTokens: the first Transport to join a gate with
// no pace makes its own the gate's, and its waiting sends keep their
// waits.
func TestAFirstJoinerKeepsItsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newShared()
		s := time.Now()
		a.sent(s)
		a.sent(s)
		time.Sleep(10 * time.Millisecond)
		a.answered(time.Now(), s, 2, true, 500*time.Millisecond, -1) // cubic, not joined
		a.answered(time.Now(), s, 1, false, 0, -1)
		if a.joined || !a.enabled {
			t.Fatal("setup")
		}
		var k token
		for range 6 {
			k, _ = a.reserve(time.Now())
		}
		before := a.due(&k, time.Now())
		a.heldElsewhere(time.Now(), 2*time.Second, true)
		after := a.due(&k, time.Now())
		t.Logf("rate %v, joined %v: last waiting token's wait %v before the join, %v after", a.fillRate, a.joined, before, after)
		assert.True(t, a.joined)
		assert.LessOrEqual(t, after, before+100*time.Millisecond, "waiting sends keep their places")
	})
}

// TestALateTransportJoinsAStartedPace: a Transport that finds a hold at a
// gate whose pace a herd elsewhere has started joins that pace, however
// little is left of the hold and though it has sent nothing to the scope,
// or one send at a time: at the reopen its sends take the pace's tokens,
// so the fleet lets go one burst, not the burst and this Transport's
// herd. Where the gate has no pace started, it joins nothing and writes
// nothing.
func TestALateTransportJoinsAStartedPace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		started bool          // a herd elsewhere started the gate's pace
		left    time.Duration // what is left of the hold when it is found
		lone    bool          // the late Transport sent one send before
	}{
		{"started, 900ms left", true, 900 * time.Millisecond, false},
		{"started, 300ms left", true, 300 * time.Millisecond, false},
		{"started, 20ms left, after a lone send", true, 20 * time.Millisecond, true},
		{"not started, 300ms left", false, 300 * time.Millisecond, false},
		{"not started, 20ms left, after a lone send", false, 20 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate().(*memGate)
				herd := &adaptive{shared: &sharedPace{gate: g, scope: "s"}}
				late := &adaptive{shared: &sharedPace{gate: g, scope: "s"}}
				s := time.Now()
				const served = 3
				for range served + 2 {
					herd.sent(s)
				}
				time.Sleep(5 * time.Millisecond)
				for i := range served {
					herd.answered(time.Now(), s, int64(served+2-i), false, 0, -1)
				}
				reopen := time.Now().Add(time.Second)
				if tc.started {
					herd.answered(time.Now(), s, 2, true, time.Second, -1)
					herd.answered(time.Now(), s, 1, true, time.Second, -1)
					if !herd.joined || !herd.enabled {
						t.Fatal("setup: the herd did not start the gate's pace")
					}
				}
				if tc.lone {
					ls := time.Now()
					late.sent(ls)
					late.answered(time.Now(), ls, 1, false, 0, -1)
				}
				time.Sleep(time.Until(reopen.Add(-tc.left)))
				before := seenOf(t, g, "s")
				late.heldElsewhere(time.Now(), tc.left, false)
				if !tc.started {
					assert.False(t, late.joined, "no pace to join")
					assert.Equal(t, before, seenOf(t, g, "s"), "nothing written")
					return
				}
				assert.True(t, late.joined)
				time.Sleep(time.Until(reopen))
				// At the reopen the pace lets go its burst, the herd's
				// served sends, between both Transports: over the 5 ms
				// the herd took to reach the server (its spread).
				var waits []time.Duration
				for range served + 1 {
					_, w := late.reserve(time.Now())
					waits = append(waits, w)
				}
				assert.Zero(t, waits[0], "the burst's first goes at once: %v", waits)
				assert.LessOrEqual(t, waits[served-1], 5*time.Millisecond, "the burst goes over its spread: %v", waits)
				assert.Greater(t, waits[served], 5*time.Millisecond, "the send past the burst waits for the pace: %v", waits)
			})
		})
	}
}

// TestAFailedLateJoinLeavesThePaceAlone: a late Transport whose attempt to
// join a started pace the gate fails, whether it ran the update or not,
// stays unjoined with its own pace as it was, and is not told to wait
// before its next attempt: its first throttle may still join.
func TestAFailedLateJoinLeavesThePaceAlone(t *testing.T) {
	for _, run := range []bool{false, true} {
		t.Run(map[bool]string{false: "not run", true: "ran, unstored"}[run], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := &failGate{memGate: NewGate().(*memGate)}
				herd := &adaptive{shared: &sharedPace{gate: g, scope: "s"}}
				late := &adaptive{shared: &sharedPace{gate: g, scope: "s"}}
				s := time.Now()
				for range 3 {
					herd.sent(s)
				}
				time.Sleep(5 * time.Millisecond)
				herd.answered(time.Now(), s, 3, false, 0, -1)
				herd.answered(time.Now(), s, 2, true, time.Second, -1)
				if !herd.joined || !herd.enabled {
					t.Fatal("setup: the herd did not start the gate's pace")
				}
				before := late.paceState.encode()
				g.fail, g.run = true, run
				late.heldElsewhere(time.Now(), 300*time.Millisecond, false)
				assert.False(t, late.joined)
				assert.True(t, late.downUntil.IsZero(), "no wait before the next attempt")
				assert.Equal(t, before, late.paceState.encode(), "its pace as it was")
				g.fail = false
				late.heldElsewhere(time.Now(), 200*time.Millisecond, false)
				assert.True(t, late.joined, "the next hold found joins")
			})
		})
	}
}

// countGate counts its pace calls, and fails them while fail is set.
type countGate struct {
	*memGate
	calls int
	fail  bool
}

func (g *countGate) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	g.calls++
	if g.fail {
		return errors.New("pace store down")
	}
	return g.memGate.Pace(ctx, scope, update)
}

// TestAHoldFoundBeforeThePaceIsAskedAgainOnce: a Transport that finds a
// hold long enough to start a pace, with none in the gate yet, asks the
// gate once more at the first send from the hold's end, and joins the pace
// if one has started since. A short hold, which starts no pace, a gate
// that failed, and a send long after the hold's end ask nothing more.
func TestAHoldFoundBeforeThePaceIsAskedAgainOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hint     time.Duration
		fail     bool
		started  bool          // another Transport starts the pace during the hold
		after    time.Duration // the first send, after the hold's end
		awaiting bool          // asks again at the hold's end
		joined   bool
	}{
		{"a pace started during the hold", time.Second, false, true, 0, true, true},
		{"a pace started, the send a moment after the hold", 2 * time.Second, false, true, 20 * time.Millisecond, true, true},
		{"no pace started", time.Second, false, false, 0, true, false},
		{"a short hold", 300 * time.Millisecond, false, false, 0, false, false},
		{"the gate down", time.Second, true, true, 0, false, false},
		{"the send long after the hold", time.Second, false, true, 2 * time.Second, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := NewGate().(*memGate)
				g := &countGate{memGate: mem, fail: tc.fail}
				b := &adaptive{shared: &sharedPace{gate: g, scope: "s"}}
				start := time.Now()
				b.heldElsewhere(start, tc.hint, false)
				assert.Equal(t, tc.awaiting, b.awaiting.Load(), "asks again")
				if tc.started {
					a := &adaptive{shared: &sharedPace{gate: mem, scope: "s"}}
					s := time.Now()
					a.sent(s)
					a.sent(s)
					time.Sleep(2 * time.Millisecond)
					a.answered(time.Now(), s, 2, true, tc.hint, -1)
					assert.True(t, a.joined, "the refused Transport starts the gate's pace")
				}
				g.fail = false
				time.Sleep(time.Until(start.Add(tc.hint + tc.after)))
				calls := g.calls
				b.reserve(time.Now())
				asked := 0
				if tc.awaiting && tc.after < paceHintLimit {
					asked = 1 // the second look
				}
				if tc.joined {
					asked++ // and the send's token, in the gate's pace
				}
				assert.Equal(t, asked, g.calls-calls, "pace calls at the send")
				assert.Equal(t, tc.joined, b.joined)
				assert.False(t, b.awaiting.Load(), "asked once")
			})
		})
	}
}
