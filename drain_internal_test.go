package heed

// Tests of where a limit's drain is measured from, and who may pace at it
// (release.go: begin, drained, drains), driving the adaptive limiter as
// adaptive_internal_test.go does (firstHerd, reopen). drain_test.go runs
// herds against the limits.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// learnDrain runs TestReleasePacesABucketAtItsDrain's first steps: a herd
// refused with its quota spent, a reopen 2 s on whose 16 sends are served,
// and one more served publishing room 2. It returns the drain learned.
func (a *adaptive) learnDrain(t *testing.T) float64 {
	a.firstHerd(16, 4, 0)
	require.True(t, a.rel.quoted)
	time.Sleep(2 * time.Second)
	reopen := a.reopen(t, 16, 10*time.Millisecond, -1)
	a.release(reopen.Add(time.Millisecond), 1, 2)
	require.Zero(t, a.flight.load())
	require.Positive(t, a.rel.drainEp)
	return a.rel.drainEp
}

// TestDrainMeasuredFromTheLastThrottle: a throttle whose answer published
// room (not spent) ends the episode, and the next one has no spent time
// to measure a drain from: a span from an older spent throttle, seconds
// before the episode, would count only the episode's own sends over it
// and read the drain far too low, and the pace would follow it down to
// half a send a second. The drain learned before stays, and paces.
func TestDrainMeasuredFromTheLastThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		drain := a.learnDrain(t)
		// Refused, publishing room 5: not spent.
		again := time.Now()
		a.sent(again)
		a.sent(again)
		a.answered(again.Add(time.Millisecond), again, 0, true, time.Second, 5)
		a.release(again.Add(time.Millisecond), 1, -1)
		require.False(t, a.rel.quoted)
		assert.True(t, a.rel.spentAt.IsZero(), "no spent time: the last throttle left room")
		time.Sleep(2 * time.Second)
		// The next episode: five sends 10 ms apart; four served at once,
		// the fifth still in flight.
		var sent []time.Time
		for i := range 5 {
			at := time.Now()
			if i == 0 {
				require.Zero(t, a.waitAndSend(at))
			} else {
				a.sent(at)
			}
			sent = append(sent, at)
			time.Sleep(10 * time.Millisecond)
		}
		for _, at := range sent[:4] {
			a.release(at, 1, -1)
		}
		// A send after it is refused with the quota spent; then the fifth
		// is served, publishing no room left.
		spent := time.Now()
		a.sent(spent)
		a.answered(spent.Add(time.Millisecond), spent, 0, true, time.Second, 0)
		require.True(t, a.rel.quoted)
		a.release(sent[4], 1, 0)
		assert.Zero(t, a.rel.drainEp, "no drain measured over a span from before the episode")
		assert.GreaterOrEqual(t, a.fillRate, drain/2, "nothing showed the limit slower: the pace stays at half the drain or more")
		time.Sleep(2 * time.Second)
		a.waitAndSend(time.Now())
		assert.InDelta(t, drain, a.rel.drain, 1e-9, "the next reopen's drain is the one learned")
	})
}

// TestDrainNotPacedAtWhenHeldElsewhere: a hold another Transport or process
// set, found at a gate that does not share the pace (a plain Gate, or a
// PaceGate whose Pace fails), says others send to the limit: the room it
// publishes is what they left, and the drain it shows is not this
// Transport's to pace at. The reopen after the hold lets go the burst, not
// what an old spent time would give, and the room steers the pace by steps.
func TestDrainNotPacedAtWhenHeldElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		a.learnDrain(t)
		require.True(t, a.drains())
		time.Sleep(10 * time.Second) // others send meanwhile; this one idles
		a.heldElsewhere(time.Now(), 2*time.Second, true)
		assert.False(t, a.drains(), "held elsewhere: not paced at the drain")
		assert.True(t, a.rel.spentAt.IsZero(), "the hold found is not this Transport's spent time")
		time.Sleep(2 * time.Second)
		require.Zero(t, a.waitAndSend(time.Now()))
		capacity := a.capacity // as the reopen judged the episode the hold ended (classify)
		// The limit publishes its room, and no drain it may pace at says
		// what came back: the reopen asks with its first send, and lets
		// go up to the burst on the answer.
		assert.False(t, a.rel.asking.IsZero(), "the reopen asks")
		assert.InDelta(t, capacity, a.rel.asked, 1e-9, "the reopen lets go the burst at most")
		a.release(time.Now(), 1, 100)
		assert.InDelta(t, capacity, a.rel.let, 1e-9, "room for more than the burst: the reopen lets go the burst")
	})
}

// TestFirstThrottleAheadOfItsHerd: a first throttle whose answer comes
// back before any served answer of its herd takes the most the herd had
// in flight as served, until the reopen counts the late answers: a rate
// from none served would be the floor, and the waiting line behind it
// would defer for a wait the reopen does not keep. One that comes back
// after some were served paces from those, as the reopen does.
func TestFirstThrottleAheadOfItsHerd(t *testing.T) {
	tests := []struct {
		name   string
		served int // answered before the refusal
		want   float64
	}{
		{"ahead of every served answer", 0, 2 * 8},
		{"after three served", 3, 2 * 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				sent := time.Now()
				a.firstHerd(tt.served, 8-tt.served, -1) // the first refusal counts
				cycle := time.Now().Add(time.Second).Sub(sent).Seconds()
				assert.InDelta(t, tt.want/cycle, a.fillRate, 1e-9)
			})
		})
	}
}
