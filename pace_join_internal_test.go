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
					a.reserve(time.Now())
					a.cancel()
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
