package heed

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdaptiveOffUntilThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		for range 1000 {
			assert.Zero(t, a.waitAndSend(time.Now()))
			a.answered(time.Now(), time.Now(), 0, false, 0, -1)
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
			a.answered(time.Now(), sent, 0, true, 0, -1)
		}
		assert.True(t, a.enabled)
		assert.InDelta(t, 320*adaptiveBeta, a.fillRate, 1)
		// A throttle of a send made after that lowers it again.
		time.Sleep(10 * time.Millisecond)
		later := time.Now()
		assert.Zero(t, a.waitAndSend(later), "a token came in 10ms")
		time.Sleep(10 * time.Millisecond)
		a.answered(time.Now(), later, 0, true, 0, -1)
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
		a.answered(time.Now(), start, 0, true, 0, -1) // 100 a second: paced at 70
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
		a.answered(time.Now(), time.Now(), 0, false, 0, -1)
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
		a.answered(time.Now(), now, 0, true, 10*time.Millisecond, -1)
		assert.InDelta(t, 100, a.fillRate, 0.01)
		time.Sleep(time.Second)
		a.waitAndSend(time.Now())
		a.answered(time.Now(), time.Now(), 0, true, 0, -1)
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
			a.answered(time.Now(), sent, 0, true, 0, -1) // throttled, nothing else in flight
		}
		assert.False(t, a.enabled, "one send at a time makes no herd")
	})
}

// TestAdaptiveCountsSendsQueuedAtTheGateAsAHerd: a send alone in flight,
// refused with a hint of a second or more, while others of the
// Transport wait at the gate for the scope's sends in flight (redisgate's
// first contact), is a herd's: the release starts, and its waiters are
// paced at the reopen, not let go at once. Done waiting, it is alone again.
func TestAdaptiveCountsSendsQueuedAtTheGateAsAHerd(t *testing.T) {
	tests := []struct {
		name   string
		queued int64
		hint   time.Duration
		want   bool
	}{
		{"none queued", 0, time.Second, false},
		{"one queued", 1, time.Second, true},
		{"three queued", 3, time.Second, true},
		{"three queued, a 2 s hint", 3, 2 * time.Second, true},
		{"queued, then done", -1, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				if tt.queued < 0 {
					a.queue(time.Now(), 1)
					a.queue(time.Now(), -1)
					time.Sleep(time.Millisecond) // the herd was before the send
				}
				for range tt.queued {
					a.queue(time.Now(), 1)
				}
				sent := time.Now()
				assert.Zero(t, a.waitAndSend(sent))
				time.Sleep(time.Millisecond)
				a.answered(time.Now(), sent, 1, true, tt.hint, -1)
				assert.Equal(t, tt.want, a.enabled)
				assert.Equal(t, tt.want, a.active.Load())
			})
		})
	}
}

// The tests give answered a level of 0, a send whose level is not known,
// which the learned cap (concurrency.go) leaves to the rate.

// waitAndSend is reserve, then sent when the send may go at once; a send
// told to wait gives its token back, to ask again later.
func (a *adaptive) waitAndSend(now time.Time) time.Duration {
	k, w := a.reserve(now)
	if w == 0 {
		a.sent(now)
	} else {
		a.cancel(k)
	}
	return w
}

func TestAdaptiveReleasesTheBurstAfterALongHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		sent := time.Now()
		for range 16 {
			a.waitAndSend(sent)
		}
		time.Sleep(10 * time.Millisecond)
		for range 6 {
			a.release(sent, 1, -1) // served
		}
		for range 10 {
			a.answered(time.Now(), sent, 0, true, time.Second, -1) // "come back in 1s"
		}
		assert.True(t, a.enabled, "a herd throttled with a long hint is paced at the reopen")
		assert.True(t, a.long)
		time.Sleep(time.Second)
		// At the reopen, the 6 the server served at once go, over the
		// 10 ms the herd took to reach the server; the seventh waits for
		// the pace.
		went := a.letGo(t, 6)
		assert.LessOrEqual(t, went[5].Sub(went[0]), 10*time.Millisecond)
		assert.Positive(t, a.waitAndSend(time.Now()))
	})
}

func TestReleaseFit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(rate float64, n int, from time.Duration) []time.Time {
		var ts []time.Time
		for i := range n {
			ts = append(ts, t0.Add(from+time.Duration(float64(i)/rate*float64(time.Second))))
		}
		return ts
	}
	for _, tc := range []struct {
		name   string
		burst  float64
		served []time.Time
		end    time.Duration
		fit    float64 // within 10 %
		pace   float64 // the rate the scope was paced at, if not 40/s
	}{
		// A bucket of 10 refilling at 100/s, paced at 200/s from full:
		// empty after 0.1 s, 20 sends.
		{"bucket 100/s", 10, at(200, 20, 0), 100 * time.Millisecond, 100, 0},
		{"bucket 40/s", 5, at(80, 10, 0), 125 * time.Millisecond, 40, 0},
		// A window of 40 let go at once: nothing past the burst.
		{"window", 40, at(10000, 40, 0), 250 * time.Millisecond, 0, 0},
		// Spans shorter than releaseMinSpan teach nothing.
		{"too short", 2, at(1000, 20, 0), 20 * time.Millisecond, 0, 0},
		// Served sends after the refused one do not count.
		{"after the refusal", 10, append(at(200, 20, 0), at(1000, 50, 200*time.Millisecond)...), 100 * time.Millisecond, 100, 0},
		// A second with no send: the four after it were the burst, served
		// from a bucket full again, and the refusal at their heels tells
		// no rate. Over the silence the fit would be 8/1.06 s, a seventh
		// of the bucket's 50/s.
		{"after a silence", 5, append(at(80, 10, 0), at(200, 4, time.Second)...), time.Second + 20*time.Millisecond, 0, 0},
		// The ramp before the silence, and the sends since, are spans of
		// their own: after it, 20 sends at 100/s from a full bucket of 5.
		{"paced again after a silence", 5, append(at(80, 10, 0), at(100, 20, time.Second)...), time.Second + 200*time.Millisecond, 75, 0},
		// Pauses as long as a few of the pace's intervals are the pace's:
		// a bucket of 2 at 10/s, paced at 10/s with 150 ms pauses.
		{"slow pace", 2, at(6.667, 10, 0), 1500 * time.Millisecond, 5.3, 6.667},
		{"slow pace, a pause of eight intervals", 2, append(at(6.667, 5, 0), at(6.667, 5, 1800*time.Millisecond)...), 2500 * time.Millisecond, 4.3, 6.667},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := release{burst: tc.burst, served: tc.served}
			pace := tc.pace
			if pace == 0 {
				pace = 40
			}
			assert.InDelta(t, tc.fit, r.fit(t0.Add(tc.end), releasePause(pace)), 0.1*tc.fit+0.01)
		})
	}
}

// TestReleaseFitsTheWholeRamp: an unfitted episode's pace doubles every
// releaseStep, so its early sends went as far apart as the rate it began
// with. A gap between them a little over four intervals of the rate it
// reached is no pause, and the fit spans the whole ramp, burst included;
// a silence longer than four intervals of the rate it began with still is
// one. (Read as a pause, a ramp from 10/s to 40/s with sends a percent
// late fit 6.6/s against a bucket of 20/s, in the bench's fleet.)
func TestReleaseFitsTheWholeRamp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		start   float64       // the ramp's first rate; it doubles twice
		burst   int           // let go at t0
		silence time.Duration // before the last step's sends: the fit is 0
	}{
		{"10/s to 40/s", 10, 5, 0},
		{"8/s to 32/s", 8, 6, 0},
		{"5/s to 20/s", 5, 5, 0},
		{"2.5/s to 10/s", 2.5, 4, 0},
		{"10/s to 40/s, a silence", 10, 5, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served []time.Time
			for range tc.burst {
				served = append(served, t0)
			}
			at, rate := t0, tc.start
			var step time.Time
			for k := range 3 {
				if k > 0 {
					step = at // doubled
				}
				if k == 2 {
					at = at.Add(tc.silence)
				}
				for range 4 {
					// a percent later than the pace: a gap of a little
					// over four intervals of the rate the ramp ends at
					at = at.Add(time.Duration(1.01 / rate * float64(time.Second)))
					served = append(served, at)
				}
				if k < 2 {
					rate *= 2
				}
			}
			end := at.Add(time.Millisecond) // the refused send
			r := release{burst: float64(tc.burst), let: float64(tc.burst), served: served, epStart: t0, step: step}
			fit := r.fit(end, releasePause(r.rampFloor(rate)))
			want := 0.0
			if tc.silence == 0 {
				want = r.fit(end, time.Hour) // no gap a pause
				require.Positive(t, want)
			}
			assert.InDelta(t, want, fit, 0.02*want+0.01, "the fit over the ramp: %.1f/s, %.1f/s with no gap a pause", fit, want)
		})
	}
}

// TestAdaptiveCutsFromWhatWasServed: refusals with no hint that the rate
// takes (not the learned cap's), each of a send made after the last, cut
// the pace from what the server served in the last second, not each from
// the cut before: a burst the server still drains does not drive the pace
// far below what it serves. Once nothing has been served for a second,
// the cuts go on down.
func TestAdaptiveCutsFromWhatWasServed(t *testing.T) {
	for _, rate := range []float64{20, 50, 100} {
		t.Run(strconv.FormatFloat(rate, 'f', -1, 64)+"/s", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.peak.Store(4)
				gap := time.Duration(float64(time.Second) / rate)
				// Served at rate for two seconds.
				for range int(2 * rate) {
					sent := time.Now()
					level := a.sent(sent)
					time.Sleep(gap)
					a.answered(time.Now(), sent, level, false, 0, -1)
				}
				// Ten refusals 20 ms apart, each of a send made after the
				// last, with another in flight: a herd.
				refuse := func() {
					sent := time.Now()
					time.Sleep(time.Millisecond)
					a.mu.Lock()
					a.paced(time.Now(), sent, 2, true, 0, 1, -1, math.Inf(1))
					a.mu.Unlock()
					time.Sleep(20 * time.Millisecond)
				}
				for range 10 {
					refuse()
				}
				assert.GreaterOrEqual(t, a.fillRate, 0.5*rate, "not below most of what was served: %.1f/s", a.fillRate)
				// Refused alone for over a second: the server serves less.
				for range 70 {
					refuse()
				}
				assert.Less(t, a.fillRate, 0.2*rate, "down, once nothing is served: %.1f/s", a.fillRate)
			})
		})
	}
}

// firstHerd sends served+refused sends at once, and answers them 10 ms on:
// served served, the rest throttled with a hint of a second, publishing
// room (-1: none).
func (a *adaptive) firstHerd(served, refused int, room int64) {
	sent := time.Now()
	for range served + refused {
		a.waitAndSend(sent)
	}
	time.Sleep(10 * time.Millisecond)
	for range served {
		a.release(sent, 1, -1)
	}
	for range refused {
		a.answered(time.Now(), sent, 0, true, time.Second, room)
	}
}

// reopen sends the reopen's first send and n more with it, and answers the
// n, served, after, publishing room (-1: none). It returns when they went.
func (a *adaptive) reopen(t *testing.T, n int, after time.Duration, room int64) time.Time {
	at := time.Now()
	require.Zero(t, a.waitAndSend(at), "the hold is over")
	for range n {
		a.sent(at)
	}
	time.Sleep(after)
	for range n {
		a.release(at, 1, room)
	}
	return at
}

// TestReleaseSteersByPublishedRoom: once a throttle published its quota
// spent, against a limit that shows no drain (a window, which gave all its
// room back over the hold), the room each served answer publishes, less
// the sends still in flight, lifts the rate (3 or more), holds it (2) or
// eases it (1 or none), by headroomGain a second; a throttle whose quota
// still had room leaves the rate to the probe.
func TestReleaseSteersByPublishedRoom(t *testing.T) {
	tests := []struct {
		name        string
		spent       int64 // the throttle's published room; -1: none
		room, other int64 // the served answer's, and the sends in flight beside it
		want        int   // +1 lifted, 0 held, -1 eased
	}{
		{"room to spare lifts", 0, 8, 0, 1},
		{"room of three lifts", 0, 3, 0, 1},
		{"room of two holds", 0, 2, 0, 0},
		{"room of one eases", 0, 1, 0, -1},
		{"no room eases", 0, 0, 0, -1},
		{"room taken by the sends in flight eases", 0, 4, 3, -1},
		{"a throttle with room left: the probe's", 5, 0, 0, 2},
		{"a throttle that published nothing: the probe's", -1, 0, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.firstHerd(4, 4, tt.spent)
				time.Sleep(time.Second)
				// The reopen's first send starts the episode; five more go
				// with it, past the burst of 4: the release paces them.
				// Served, publishing room of the whole burst, as a window
				// does once its hold has given it all back: no drain steers
				// the pace (TestReleasePacesABucketAtItsDrain).
				a.reopen(t, 5, 50*time.Millisecond, 3)
				require.Zero(t, a.rel.drain+a.rel.drainEp, "no drain")
				require.Equal(t, int64(1), a.flight.load(), "one send left in flight")
				before := a.fillRate
				for range tt.other {
					a.flight.add()
				}
				a.release(time.Now(), 1, tt.room)
				after := a.fillRate
				step := 1 + headroomGain/max(before, 1)
				switch tt.want {
				case 1:
					// By a step, or to the room taken up within a second.
					assert.InDelta(t, math.Max(before*step, float64(tt.room)/headroomSpan.Seconds()), after, 1e-9, "lifted")
				case 0:
					assert.InDelta(t, before, after, 1e-9, "held")
				case -1:
					assert.InDelta(t, before/step, after, 1e-9, "eased")
				default:
					assert.False(t, a.rel.quoted, "the room is not the refusing limit's")
				}
			})
		})
	}
}

// TestReleasePacesABucketAtItsDrain: a limit that published its quota
// spent as it refused, and then, past the hold, room beside the sends it
// served, gave back that room and those sends since it was spent: its
// drain. The reopen after lets go what the drain gave back since, less
// the sends that went since, and paces at the drain, steered by the room
// the answers publish: room beyond two lifts the pace above the drain,
// room short of it eases it below, to half the drain at most. Room of
// the whole burst shows a window, which has no drain.
func TestReleasePacesABucketAtItsDrain(t *testing.T) {
	tests := []struct {
		name  string
		room  int64 // the reopen's last answer's
		other int64 // sends in flight beside it
		want  int   // +1 above the drain, 0 at it, -1 below it; 2: no drain
	}{
		{"room to spare paces above the drain", 6, 0, 1},
		{"room of two paces at the drain", 2, 0, 0},
		{"no room paces below the drain", 0, 0, -1},
		{"room taken by the sends in flight paces below the drain", 3, 3, -1},
		{"room of the whole burst shows a window", 15, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				spent := time.Now()
				a.firstHerd(16, 4, 0) // the quota spent
				require.True(t, a.rel.quoted)
				time.Sleep(2 * time.Second)
				// The reopen lets its burst of 16 go, and one more after
				// it; they are answered at once, the last publishing room.
				reopen := a.reopen(t, 16, 10*time.Millisecond, -1)
				for range tt.other {
					a.flight.add()
				}
				last := reopen.Add(time.Millisecond)
				a.release(last, 1, tt.room)
				if tt.want == 2 {
					assert.Zero(t, a.rel.drainEp, "a window's room tells no drain")
					return
				}
				drain := float64(tt.room+1+16) / last.Sub(spent).Seconds()
				assert.InDelta(t, drain, a.rel.drainEp, 1e-9, "the room and the sends served since the limit was spent")
				switch tt.want {
				case 1:
					assert.Greater(t, a.fillRate, drain)
				case 0:
					assert.InDelta(t, drain, a.fillRate, 1e-9)
				case -1:
					assert.Less(t, a.fillRate, drain)
					assert.GreaterOrEqual(t, a.fillRate, drain/2)
				}
				for range tt.other {
					a.flight.sub()
				}
				// Refused again: the next reopen lets go what the drain
				// gave back since, less the send served since, and paces
				// at the drain.
				again := time.Now()
				a.sent(again)
				a.sent(again)
				a.answered(again.Add(time.Millisecond), again, 0, true, time.Second, 0)
				a.release(again.Add(time.Millisecond), 1, -1) // served, sent just after the refused one
				require.Zero(t, a.flight.load())
				time.Sleep(2 * time.Second)
				at := time.Now()
				burst := a.capacity
				a.waitAndSend(at)
				assert.InDelta(t, math.Min(math.Floor(drain*at.Sub(again).Seconds())-1, burst), a.rel.let, 1e-9, "let go at the reopen")
				assert.LessOrEqual(t, a.fillRate, drain, "paced at the drain at most")
				assert.False(t, a.rel.window, "refused past the reopen's burst with a drain known: not a window")
			})
		})
	}
}

// TestHeadroomReadsTheRoomAsOfItsSend: an answer's room is the server's
// as it took the send. The sends that went after it, served or in flight,
// take from it; the limit's drain meanwhile, taken to be what was served
// in the second before the send, gives back. Easing stops at that drain,
// so that answers slower than a second do not ease a scope kept full at
// its drain below it, and a burst let go at a reopen sees its room spent.
func TestHeadroomReadsTheRoomAsOfItsSend(t *testing.T) {
	const rate = 4.0
	lifted, eased := rate*(1+headroomGain/rate), rate/(1+headroomGain/rate)
	tests := []struct {
		name   string
		age    time.Duration // from the send to its answer
		room   int64
		others int64 // sends in flight
		before int   // sends served in the second before the send
		after  int   // sends that went after it, served already
		want   float64
	}{
		{"room of two, in flight what the drain gave back: held", 2 * time.Second, 2, 8, 4, 0, rate},
		{"room of three, in flight what the drain gave back: lifted by a step", 2 * time.Second, 3, 8, 4, 0, lifted},
		{"room of five, in flight what the drain gave back: lifted to take it up in a second", 2 * time.Second, 5, 8, 4, 0, 5},
		{"room of five, in flight and served what the drain gave back: lifted to take it up in a second", 2 * time.Second, 5, 4, 4, 4, 5},
		{"room of five, three sends beyond the drain: held", 2 * time.Second, 5, 11, 4, 0, rate},
		{"room of five, three served beyond the drain: held", 2 * time.Second, 5, 8, 4, 3, rate},
		{"room of two, seven beyond the drain: eased", 2 * time.Second, 2, 11, 2, 0, eased},
		{"a burst at a reopen, nothing served before it: eased", 50 * time.Millisecond, 8, 10, 0, 0, eased},
		{"no room, answered at once: eased", 0, 0, 0, 0, 0, eased},
		{"no room, the rate served before the send: held at the drain", 2 * time.Second, 0, 8, 4, 0, rate},
		{"no room, half the rate served before the send: eased by a step", 2 * time.Second, 0, 8, 2, 0, eased},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.peak.Store(2) // a herd's: served sends are recorded
				time.Sleep(2 * time.Second)
				now := time.Now()
				sent := now.Add(-tt.age)
				a.served(sent.Add(-1500 * time.Millisecond)) // out of the second: not counted
				for i := range tt.before {
					a.served(sent.Add(-time.Duration(i+1) * 200 * time.Millisecond))
				}
				a.served(sent) // the send answered
				for i := range tt.after {
					a.served(sent.Add(time.Duration(i+1) * tt.age / time.Duration(tt.after+1)))
				}
				a.setRate(rate)
				a.headroom(now, sent, tt.room, tt.others)
				assert.InDelta(t, tt.want, a.fillRate, 1e-9)
			})
		})
	}
}

// TestHeadroomTakesUpTheRoomInASecond: room to spare lifts the rate to
// take it up within headroomSpan when that is more than a step, so that a
// rate left low climbs at once; not where others send to the limit
// unseen (crowded), where every Transport would take the whole room, nor
// where answers take releaseAsk or more and the room is stale.
func TestHeadroomTakesUpTheRoomInASecond(t *testing.T) {
	const rate = 4.0
	step := rate * (1 + headroomGain/rate)
	tests := []struct {
		name    string
		room    int64
		crowded bool
		took    time.Duration // the last served answer's time
		want    float64
	}{
		{"room of ten: ten a second", 10, false, time.Millisecond, 10},
		{"room of forty: forty a second", 40, false, 50 * time.Millisecond, 40},
		{"room of four: a step", 4, false, time.Millisecond, step},
		{"room of ten, crowded: a step", 10, true, time.Millisecond, step},
		{"room of ten, answers in 3 s: a step", 10, false, 3 * time.Second, step},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.peak.Store(2)
				a.crowded = tt.crowded
				a.rel.took = tt.took
				time.Sleep(2 * time.Second)
				now := time.Now()
				a.served(now)
				a.setRate(rate)
				a.headroom(now, now, tt.room, 0)
				assert.InDelta(t, tt.want, a.fillRate, 1e-9)
			})
		})
	}
}

// TestSendsRiseAsAHerdForms: a send that takes its scope's sends in
// flight to a new high, of two or more, is told so (a herd forming, whose
// send may dial); a lone send, and a send at or below the high, is not.
func TestSendsRiseAsAHerdForms(t *testing.T) {
	var a adaptive
	now := time.Now()
	steps := []struct {
		answer bool // answer one send rather than send one
		level  int64
		rose   bool
	}{
		{false, 1, false}, // a lone send
		{true, 0, false},
		{false, 1, false},
		{false, 2, true}, // a herd forming
		{false, 3, true},
		{true, 0, false},
		{false, 3, false}, // back to the high, not past it
		{false, 4, true},
	}
	for i, s := range steps {
		if s.answer {
			a.flight.sub()
			continue
		}
		level, rose := a.sentAt(now, mono(now))
		assert.Equal(t, s.level, level, "step %d", i)
		assert.Equal(t, s.rose, rose, "step %d", i)
	}
}

// TestSendsWaitingAtTheGateLeaveAHerdForming: sends that waited at the gate
// for the scope's sends in flight make a herd (served sends are kept for
// the first burst), but the send that first takes this Transport's own
// sends in flight to two is still a herd forming, checked at the wire.
func TestSendsWaitingAtTheGateLeaveAHerdForming(t *testing.T) {
	for _, waiting := range []int64{1, 3} {
		var a adaptive
		now := time.Now()
		for range waiting {
			a.queue(now, 1)
		}
		assert.True(t, a.herded(), "%d waiting: a herd", waiting)
		_, rose := a.sentAt(now, mono(now))
		assert.False(t, rose, "%d waiting: one send in flight", waiting)
		_, rose = a.sentAt(now, mono(now))
		assert.True(t, rose, "%d waiting: the second in flight is a herd forming", waiting)
		for range waiting {
			a.queue(now, -1)
		}
		assert.True(t, a.herded(), "%d waiting, then none: still a herd once", waiting)
	}
}

// TestFormingSendCheckedWhilePeaksCross: of two sends that take a scope's
// sends in flight to 2 and then 3, the first may reach the peak after the
// second raised it (its measure waits on the limiter's lock, taken for
// the first send of each half second). It still took the sends in flight
// to a new high and is told so.
func TestFormingSendCheckedWhilePeaksCross(t *testing.T) {
	var a adaptive
	now := time.Now()
	half := int64(time.Second / adaptiveBucket)
	boundary := now.Add(time.Duration((mono(now)/half+1)*half - mono(now)))
	t0 := boundary.Add(-time.Millisecond)
	level, rose := a.sentAt(t0, mono(t0)) // a lone send so far
	require.Equal(t, int64(1), level)
	require.False(t, rose)

	// The second is stamped past the half second: its measure closes the
	// bucket under the lock, held meanwhile by another.
	a.mu.Lock()
	type result struct {
		level int64
		rose  bool
	}
	second := make(chan result)
	t1 := boundary.Add(time.Microsecond)
	go func() {
		l, r := a.sentAt(t1, mono(t1))
		second <- result{l, r}
	}()
	require.Eventually(t, func() bool { return a.flight.load() >= 2 }, time.Second, time.Microsecond)
	// The third, stamped a moment before the half second, measures
	// without the lock and raises the peak first.
	t2 := boundary.Add(-time.Microsecond)
	level3, rose3 := a.sentAt(t2, mono(t2))
	a.mu.Unlock()
	r2 := <-second

	assert.Equal(t, int64(2), r2.level)
	assert.True(t, r2.rose, "the second send took the sends in flight to a new high")
	assert.Equal(t, int64(3), level3)
	assert.True(t, rose3)
	assert.Equal(t, int64(3), a.peak.Load())
}

// TestAdaptiveCutsOncePerBurstOfTokens: a refusal with no hint cuts the
// pace only when its send went on a token granted after the last cut.
// The sends of a burst the cut found granted, and sends on no token (they
// passed the pace before it began), are refused as the server drains that
// burst, however spread their answers: they do not cut again. After such a
// cut, the pace's bucket holds a quarter of a second of its rate, so that
// a scope idle meanwhile lets go no larger burst.
func TestAdaptiveCutsOncePerBurstOfTokens(t *testing.T) {
	for _, tc := range []struct {
		herd int           // sends of the first herd
		over time.Duration // the time they went over
		idle time.Duration // the scope's idle time before the next burst
	}{
		{32, 100 * time.Millisecond, 500 * time.Millisecond},
		{100, 100 * time.Millisecond, time.Second},
		{10, 500 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(strconv.Itoa(tc.herd)+" in "+tc.over.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Each send is answered before the next goes, so that no
				// refusal is the learned cap's (concurrency.go).
				var a adaptive
				take := func() token {
					k, w := a.reserve(time.Now())
					require.Zero(t, w, "a token is granted")
					return k
				}
				refuse := func(k token) {
					sent := time.Now()
					a.sent(sent)
					time.Sleep(5 * time.Millisecond)
					a.answeredOn(time.Now(), sent, 2, true, 0, -1, k)
				}
				for range tc.herd - 1 {
					sent := time.Now()
					a.sent(sent)
					a.release(sent, 2, -1)
					time.Sleep(tc.over / time.Duration(tc.herd))
				}
				refuse(token{})
				require.True(t, a.enabled, "the herd's refusal starts the pace")
				rate := a.fillRate

				// The scope idles: its bucket fills to a quarter second.
				time.Sleep(tc.idle)
				a.mu.Lock()
				a.refill(time.Now())
				stored := a.granted - a.issued
				a.mu.Unlock()
				assert.LessOrEqual(t, stored, math.Max(rate*blindCapacity, 1)+1e-9, "a quarter second of the pace stored")

				// The stored tokens go as one burst, refused one by one:
				// the first refusal cuts, the rest of that burst do not,
				// nor do sends that went on no token.
				var burst []token
				for range int(stored) {
					burst = append(burst, take())
				}
				require.NotEmpty(t, burst)
				for i, k := range burst {
					refuse(k)
					if i == 0 {
						assert.Less(t, a.fillRate, rate, "the burst's first refusal cuts")
						rate = a.fillRate
					}
					refuse(token{}) // a send that passed the pace before it began
					assert.Equal(t, rate, a.fillRate, "one cut for the burst")
				}

				// A send on a token granted after that cut is the new
				// pace's, and its refusal cuts again; the tokens the cut
				// found stored go first.
				time.Sleep(time.Second)
				k := take()
				for k.n <= a.cut {
					refuse(k)
					assert.Equal(t, rate, a.fillRate, "a token the cut found stored")
					k = take()
				}
				refuse(k)
				assert.Less(t, a.fillRate, rate, "a refusal of the new pace cuts")
			})
		})
	}
}

// TestAdaptiveNoTokenIsNoneInAnyNumbering: a send on no pacing token (it
// passed the gate before the pace began) is on none after a join renumbers
// the tokens too: its refusal tells of the burst already cut for, and does
// not cut the pace the Transport joined.
func TestAdaptiveNoTokenIsNoneInAnyNumbering(t *testing.T) {
	for _, shift := range []float64{1, 40, 500} {
		t.Run(strconv.FormatFloat(shift, 'f', -1, 64), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				now := time.Now()
				a.enabled, a.fillRate, a.capacity, a.lastFill = true, 50, 12.5, now
				a.floor, a.lastThrottle = adaptiveMinRate, now
				a.issued, a.granted, a.cut = shift/2, shift/2, shift/2
				a.active.Store(true)
				a.gen, a.shift = 1, shift // a join since the send reserved
				time.Sleep(100 * time.Millisecond)
				sent := time.Now()
				a.sent(sent)
				time.Sleep(5 * time.Millisecond)
				a.answeredOn(time.Now(), sent, 1, true, 0, -1, token{})
				assert.Equal(t, 50.0, a.fillRate, "no cut for a send on no token")
				a.sent(sent)
				a.answeredOn(time.Now(), sent, 1, true, 0, -1, token{n: 11, gen: 0})
				assert.Less(t, a.fillRate, 50.0, "a token of the old numbering past the cut cuts")
			})
		})
	}
}

// TestAdaptiveCutWhileSendsWaitIsACutOfThePace: a refusal with no hint
// while sends wait for tokens cuts from the pace, at which the scope is
// sending, not from the measured rate, which trails it.
func TestAdaptiveCutWhileSendsWaitIsACutOfThePace(t *testing.T) {
	for _, tc := range []struct {
		pace, measured float64
		waiting        float64 // sends waiting for tokens
	}{
		{50, 20, 5},
		{200, 40, 1},
		{10, 3, 30},
	} {
		t.Run(strconv.FormatFloat(tc.pace, 'f', -1, 64), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				now := time.Now()
				a.enabled, a.fillRate, a.capacity, a.lastFill = true, tc.pace, tc.pace/4, now
				a.floor, a.lastThrottle = adaptiveMinRate, now
				a.issued, a.granted = 100+tc.waiting, 100
				a.measured = tc.measured
				a.warm.Store(true)
				a.active.Store(true)
				time.Sleep(10 * time.Millisecond)
				sent := time.Now()
				a.sent(sent)
				a.answeredOn(time.Now(), sent, 1, true, 0, -1, token{n: a.issued})
				assert.InDelta(t, tc.pace*adaptiveBeta, a.fillRate, 1e-9, "0.7 of the pace")

				// With none waiting, the cut is from the rate the scope sent at.
				a.issued = a.granted
				time.Sleep(10 * time.Millisecond)
				a.measured = tc.measured
				sent = time.Now()
				a.sent(sent)
				a.answeredOn(time.Now(), sent, 1, true, 0, -1, token{n: math.Inf(1)})
				assert.InDelta(t, math.Min(tc.measured, tc.pace*adaptiveBeta)*adaptiveBeta, a.fillRate, 1e-9, "0.7 of the measured rate")
			})
		})
	}
}

// TestAdaptiveSendsQueuedUnderTheCapMakeAHerd: a lone send's refusal with
// no hint starts no pace, but one whose scope has sends waiting for a slot
// under the learned cap is a herd's, and starts it.
func TestAdaptiveSendsQueuedUnderTheCapMakeAHerd(t *testing.T) {
	for _, queued := range []int{0, 1, 5} {
		t.Run(strconv.Itoa(queued), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.ceil.limit, a.ceil.inflight = 1, &a.flight
				a.ceil.on.Store(true)
				for range queued {
					a.ceil.line = append(a.ceil.line, make(chan struct{}))
				}
				time.Sleep(time.Second)
				sent := time.Now()
				a.sent(sent)
				time.Sleep(10 * time.Millisecond)
				a.answeredOn(time.Now(), sent, 1, true, 0, -1, token{})
				assert.Equal(t, queued > 0, a.enabled, "the pace starts for a herd queued under the cap")
			})
		})
	}
}

// TestAdaptiveFirstBurstCountsSendsMeasuredLate: a herd's sends are stamped
// before they are measured, in whatever order their goroutines run. Sends
// stamped before the first one measured, served and answered after the
// refusal, are the first episode's burst all the same: counted from the
// first measured, none was, the reopen let go a burst of one, and the
// rate past it started at two a second.
func TestAdaptiveFirstBurstCountsSendsMeasuredLate(t *testing.T) {
	tests := []struct {
		served int
		ahead  time.Duration // how much earlier than the first measured they went
	}{
		{9, time.Millisecond},
		{4, 5 * time.Millisecond},
		{20, 300 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d sends %v ahead", tt.served, tt.ahead), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				early := time.Now()
				time.Sleep(tt.ahead)
				late := time.Now()
				a.sent(late) // measured first, and refused
				for range tt.served {
					a.sent(early)
				}
				time.Sleep(2 * time.Millisecond)
				a.answered(time.Now(), late, 0, true, time.Second, -1)
				for range tt.served {
					a.release(early, 1, -1)
				}
				require.True(t, a.rel.on)
				time.Sleep(time.Second)
				require.Zero(t, a.waitAndSend(time.Now()), "the reopen")
				assert.InDelta(t, float64(tt.served), a.rel.burst, 1e-9, "the burst is every send served before the refusal")
			})
		})
	}
}

// TestReleaseLetsNoLapsedTokenGo: tokens come due while the release holds
// the scope, by the rate and by tokens given back by sends that found the
// hold. A send whose token came due, woken only after the reopen, takes
// another in the reopen's line, and one that does not go gives back
// nothing: the reopen lets go its burst and no send on top of it, whatever
// the burst and however many tokens came due, at the first reopen and at
// a later one.
func TestReleaseLetsNoLapsedTokenGo(t *testing.T) {
	tests := []struct {
		served, refused int
		waiting, back   int // tokens taken in the hold; of them, given back
	}{
		{10, 1, 6, 3},
		{20, 12, 12, 8},
		{5, 3, 4, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("burst %d, %d waiting, %d given back", tt.served, tt.waiting, tt.back), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				reopenOnce := func(reopen time.Time) {
					stale := make([]token, tt.waiting)
					for i := range stale {
						stale[i], _ = a.reserve(time.Now())
					}
					for i := range tt.back {
						a.cancel(stale[i]) // found the hold
					}
					time.Sleep(time.Until(reopen) + time.Millisecond)
					went := 0
					var held []token
					for _, k := range stale[tt.back:] {
						if a.due(&k, time.Now()) == 0 {
							went++
							a.sent(time.Now())
						} else {
							held = append(held, k)
						}
					}
					// The first reopen lets its burst go over a spread.
					time.Sleep(time.Until(a.rel.spread))
					for _, k := range held {
						if a.due(&k, time.Now()) == 0 {
							went++
							a.sent(time.Now())
						}
					}
					past := a.waitAndSend(time.Now())
					for ; past == 0; past = a.waitAndSend(time.Now()) {
						went++
						require.Less(t, went, 1000)
					}
					assert.Equal(t, int(a.rel.let), went, "the reopen lets go its burst, and no more")
					assert.GreaterOrEqual(t, past, time.Duration(float64(time.Second)/a.fillRate), "tokens are whole: the first send past the burst waits a whole interval")
					granted := a.granted
					a.cancel(token{n: a.rel.lapsed, gen: a.gen})
					assert.Equal(t, granted, a.granted, "a lapsed token gives back nothing")
				}
				a.firstHerd(tt.served, tt.refused, -1)
				reopenOnce(a.rel.reopen)

				// The next throttle, and its reopen.
				time.Sleep(10 * time.Millisecond)
				refused := time.Now()
				a.sent(refused)
				time.Sleep(2 * time.Millisecond)
				a.answered(time.Now(), refused, 1, true, time.Second, -1)
				reopenOnce(a.rel.reopen)
			})
		})
	}
}

// TestRampingPaceRechecksSoon: while the release's rate climbs by steps,
// a send waiting on a token asks again within half its wait, so a
// doubling meanwhile lets it go when the doubled rate brings its token,
// within askRecheck, not when the rate before it would have: a send that
// slept its whole wait went late, a moment before or after sends the
// doubled rate let go in turn, too close to them for a bucket. Once the
// rate is fitted it no longer climbs by steps, and a send sleeps its wait,
// paceRecheck at most, as it does on a pace shared through a gate. At
// several rates whose waits are under paceRecheck.
func TestRampingPaceRechecksSoon(t *testing.T) {
	for _, rate := range []float64{80, 160, 400} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.enabled, a.long, a.fillRate, a.capacity, a.lastFill = true, true, rate, 1, time.Now()
				a.rel.on = true
				a.active.Store(true)
				var k token
				var wait time.Duration
				for range 4 {
					k, wait = a.reserve(time.Now())
				}
				interval := time.Duration(float64(time.Second) / rate)
				require.Equal(t, 4*interval, wait)
				start := time.Now()
				doubled := make(chan struct{})
				go func() {
					defer close(doubled)
					time.Sleep(interval) // a token has come
					a.mu.Lock()
					a.refill(time.Now())
					a.setRate(2 * rate)
					a.mu.Unlock()
				}()
				for wait > 0 {
					time.Sleep(a.recheck(wait))
					wait = a.due(&k, time.Now())
				}
				<-doubled
				due := interval + 3*interval/2 // the rest at twice the rate
				assert.GreaterOrEqual(t, time.Since(start), due)
				assert.LessOrEqual(t, time.Since(start), due+askRecheck, "goes when the doubled rate brings its token")

				assert.Equal(t, 2*interval, a.recheck(4*interval), "climbing: half the wait")
				a.joined = true
				assert.Equal(t, 4*interval, a.recheck(4*interval), "a pace shared through a gate: the whole wait")
				a.joined, a.rel.fitted = false, true
				assert.Equal(t, 4*interval, a.recheck(4*interval), "a fitted rate: the whole wait")
			})
		})
	}
}

// TestRefillCountsNoTimeTwice: a send reads the clock before it takes the
// limiter's lock, so a refill may come with a time before the last one.
// It grants nothing, and the next refill grants from the last fill, not
// from the stale time: at the pace's rate and, many times faster, in the
// first reopen's spread, where granting a few milliseconds twice would let
// go sends past the burst.
func TestRefillCountsNoTimeTwice(t *testing.T) {
	for _, spread := range []bool{false, true} {
		t.Run(fmt.Sprintf("in the spread %v", spread), func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			var a adaptive
			a.enabled, a.long, a.fillRate, a.capacity, a.issued, a.granted, a.lastFill = true, true, 20, 10, 30, 21, t0
			rate := a.fillRate
			if spread {
				a.rel.on, a.rel.let, a.rel.lapsed, a.rel.epStart, a.rel.spread = true, 10, 20, t0, t0.Add(9*time.Millisecond)
				rate = a.rel.spreadRate()
				require.True(t, a.spreading())
			}
			a.refill(t0.Add(4 * time.Millisecond))
			granted := a.granted
			assert.InDelta(t, 21+0.004*rate, granted, 1e-9)
			a.refill(t0.Add(time.Millisecond)) // read before the last fill
			assert.Equal(t, granted, a.granted, "a stale time grants nothing")
			a.refill(t0.Add(6 * time.Millisecond))
			assert.InDelta(t, 21+0.006*rate, a.granted, 1e-9, "from the last fill on")
		})
	}
}

// TestSpreadOfNoSpanIsNone: a pace state whose spread does not end after
// its episode's start, or whose reopen lets go one send (a gate's state,
// crafted or corrupt), has no spread: waits stay finite, and tokens come
// at the pace's rate.
func TestSpreadOfNoSpanIsNone(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name   string
		let    float64
		spread time.Time
	}{
		{"ends at the start", 10, t0},
		{"ends before it", 10, t0.Add(-time.Millisecond)},
		{"one send", 1, t0.Add(10 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a adaptive
			a.enabled, a.long, a.fillRate, a.capacity, a.issued, a.granted, a.lastFill = true, true, 20, 10, 30, 21, t0.Add(-time.Millisecond)
			a.rel.on, a.rel.let, a.rel.lapsed, a.rel.epStart, a.rel.spread = true, tc.let, 20, t0, tc.spread
			assert.False(t, a.spreading())
			a.refill(t0.Add(50 * time.Millisecond))
			assert.InDelta(t, 21+0.051*20, a.granted, 1e-9, "at the pace's rate")
			assert.Equal(t, time.Duration(math.Ceil((31-a.granted)/20*float64(time.Second))), a.until(31))
		})
	}
}

// TestReleaseSpreadsNoBurstOfAPublishedRoom: where the refusal published
// the limit's room spent, the first reopen has no spread: the scope may
// have been held on that room before any send was refused (a window's
// served answers publish it), so the first episode's span is no measure
// of the herd's, and the room the answers publish steers the pace. Its
// answers here come too slowly for the reopen to ask, and the burst goes
// at once. At several bursts.
func TestReleaseSpreadsNoBurstOfAPublishedRoom(t *testing.T) {
	for _, burst := range []int{4, 10, 20} {
		t.Run(fmt.Sprint(burst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				start := time.Now()
				var sent []time.Time
				for i := range burst {
					at := start.Add(time.Duration(i) * time.Millisecond)
					time.Sleep(time.Until(at))
					a.waitAndSend(at)
					sent = append(sent, at)
				}
				refused := time.Now()
				a.waitAndSend(refused)
				time.Sleep(2 * releaseAsk)
				for _, s := range sent {
					a.release(s, 1, 0)
				}
				a.answered(time.Now(), refused, 0, true, time.Second, 0)
				require.True(t, a.rel.quoted)
				time.Sleep(time.Until(a.rel.reopen))
				for i := range burst {
					assert.Zero(t, a.waitAndSend(time.Now()), "send %d of the burst goes at once", i+1)
				}
				assert.True(t, a.rel.spread.IsZero(), "no spread")
			})
		})
	}
}

// TestReleaseSpreadsTheFirstBurst: a herd whose sends went over a span,
// the refused one last, answered took after it, is let go at its first
// reopen over as long as it may have taken to reach the server, from its
// first send to the refusal's answer, and no longer than the pace would
// take to let it go: one at once, the rest evenly by the spread's end,
// and the first send past the burst an interval of the pace after it. A
// send that takes a token in the spread and gives it back (it found a
// hold) moves the line up by one, and takes nothing from the sends behind
// it. At several bursts, spans and answer times.
func TestReleaseSpreadsTheFirstBurst(t *testing.T) {
	tests := []struct {
		burst      int
		span, took time.Duration
	}{
		{10, 9 * time.Millisecond, 5 * time.Millisecond},
		{20, 38 * time.Millisecond, 2 * time.Millisecond},
		{5, 20 * time.Millisecond, 30 * time.Millisecond},
		{4, 900 * time.Millisecond, 10 * time.Millisecond}, // as long as the pace takes
		{8, 0, 10 * time.Millisecond},                      // sent at one instant
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d over %v, answered %v on", tt.burst, tt.span, tt.took), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				start := time.Now()
				var sent []time.Time
				for i := range tt.burst {
					at := start.Add(time.Duration(i) * tt.span / time.Duration(tt.burst))
					time.Sleep(time.Until(at))
					a.waitAndSend(at)
					sent = append(sent, at)
				}
				time.Sleep(time.Until(start.Add(tt.span)))
				refused := time.Now()
				a.waitAndSend(refused)
				time.Sleep(tt.took)
				for _, s := range sent {
					a.release(s, 1, -1)
				}
				a.answered(time.Now(), refused, 0, true, time.Second, -1)
				require.True(t, a.long)
				time.Sleep(time.Until(a.rel.reopen))
				reopen := time.Now()
				require.Zero(t, a.waitAndSend(reopen), "the first goes at once")
				spread := min(tt.span+tt.took, time.Duration(float64(tt.burst-1)/a.fillRate*float64(time.Second)))
				gap := spread / time.Duration(tt.burst-1)
				// A send that finds a hold in the spread gives its token back.
				k, _ := a.reserve(reopen)
				a.cancel(k)
				for i := 1; i < tt.burst; i++ {
					k, wait := a.reserve(time.Now())
					due := reopen.Add(time.Duration(i) * gap)
					assert.InDelta(t, float64(time.Until(due)), float64(wait), float64(time.Microsecond), "send %d of the burst goes %v after the first", i+1, time.Duration(i)*gap)
					time.Sleep(wait)
					require.Zero(t, a.due(&k, time.Now()))
					a.sent(time.Now())
				}
				_, past := a.reserve(time.Now())
				interval := time.Duration(float64(time.Second) / a.fillRate)
				assert.InDelta(t, float64(interval), float64(past), float64(time.Microsecond), "the first send past the burst waits an interval of the pace")
			})
		})
	}
}

// TestReleaseJudgesTheEpisodeAtTheReopen: a window lets the reopen's burst
// go whole, and refuses the first send past it; the refusal's answer came
// before the answer of a send of the burst that reached the server first.
// Judged at the refusal, nine of ten served read as refused within the
// burst, and the next reopen let go nine. Judged at the reopen, with every
// answer in, the burst was served and nothing past it: the next reopen
// lets go the whole burst, at several bursts and answer orders.
func TestReleaseJudgesTheEpisodeAtTheReopen(t *testing.T) {
	tests := []struct {
		burst, late int // late: burst answers that come after the refusal's
	}{
		{10, 1},
		{20, 3},
		{6, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("burst %d, %d late", tt.burst, tt.late), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.firstHerd(tt.burst, 1, -1)
				time.Sleep(time.Until(a.rel.reopen))
				went := a.letGo(t, tt.burst)
				wait := a.waitAndSend(time.Now())
				require.Positive(t, wait, "the send past it is paced")
				time.Sleep(time.Millisecond)
				for _, s := range went[:tt.burst-tt.late] {
					a.release(s, 1, -1)
				}
				time.Sleep(wait)
				past := time.Now()
				a.sent(past)
				time.Sleep(2 * time.Millisecond)
				a.answered(time.Now(), past, 0, true, time.Second, -1)
				for _, s := range went[tt.burst-tt.late:] {
					a.release(s, 1, -1)
				}
				time.Sleep(time.Until(a.rel.reopen))
				for range tt.burst {
					require.Zero(t, a.waitAndSend(time.Now()), "the next reopen lets go the whole burst")
				}
				assert.InDelta(t, float64(tt.burst), a.rel.let, 1e-9)
			})
		})
	}
}

// letGo sends n through the gate from now, each as soon as its token is
// due: the first at once, and the last by the end of the reopen's spread
// (release.spread; at once where it has none). It returns when each went.
func (a *adaptive) letGo(t *testing.T, n int) []time.Time {
	went := make([]time.Time, 0, n)
	for i := range n {
		k, wait := a.reserve(time.Now())
		if i == 0 {
			require.Zero(t, wait, "the burst's first goes at once")
		}
		if wait > 0 {
			time.Sleep(wait)
			require.Zero(t, a.due(&k, time.Now()), "send %d of %d at its turn", i+1, n)
		}
		a.sent(time.Now())
		went = append(went, time.Now())
	}
	end := max(a.rel.spread.UnixNano(), went[0].UnixNano()) + 1000 // the ns of a wait rounded up
	require.LessOrEqual(t, went[n-1].UnixNano(), end, "the burst goes by its spread's end")
	return went
}

// overshoot runs a first herd of burst, its reopen's burst, served, and a
// send past it refused with a hint of a second: the release holds the
// scope, with the episode still to be judged (classify).
func (a *adaptive) overshoot(t *testing.T, burst int) {
	a.firstHerd(burst, 1, -1)
	time.Sleep(time.Until(a.rel.reopen))
	for _, s := range a.letGo(t, burst) {
		a.release(s, 1, -1)
	}
	k, wait := a.reserve(time.Now())
	require.Positive(t, wait)
	time.Sleep(wait)
	require.Zero(t, a.due(&k, time.Now()))
	past := time.Now()
	a.sent(past)
	time.Sleep(2 * time.Millisecond)
	a.answeredOn(time.Now(), past, 1, true, time.Second, -1, k)
	require.False(t, a.rel.refused.IsZero())
}

// TestReleaseLeavesTheCubicsRate: when the cubic takes the scope over
// while the release holds it (a refusal with no hint of a send that went
// after the hold's), the episode the hold ended is not judged at the
// reopen over the cubic's rate. At several bursts.
func TestReleaseLeavesTheCubicsRate(t *testing.T) {
	for _, burst := range []int{5, 10, 20} {
		t.Run(fmt.Sprint(burst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.overshoot(t, burst)
				time.Sleep(time.Millisecond)
				escaped := time.Now()
				a.sent(escaped)
				a.answered(escaped.Add(time.Millisecond), escaped, 1, true, 0, -1)
				require.False(t, a.long, "the cubic's")
				rate := a.fillRate
				time.Sleep(time.Until(a.rel.reopen) + time.Millisecond)
				a.waitAndSend(time.Now())
				assert.True(t, a.rel.refused.IsZero())
				assert.False(t, a.rel.fitted, "no fit over the cubic's rate")
				assert.InDelta(t, rate, a.fillRate, 1e-9, "the episode is not judged over the cubic's rate")
			})
		})
	}
}

// TestReleaseThrottleWithinTheHold: a throttle that comes while the release
// holds the scope, of a send that went after the one that set the hold (a
// hold found elsewhere here), keeps the later of the two ends, and the
// episode is judged as its first refusal ended it.
func TestReleaseThrottleWithinTheHold(t *testing.T) {
	for _, hint := range []time.Duration{600 * time.Millisecond, 2 * time.Second, 5 * time.Second} {
		t.Run(hint.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				a.overshoot(t, 10)
				reopen, refused, cut := a.rel.reopen, a.rel.refused, a.rel.epRefused
				time.Sleep(100 * time.Millisecond)
				a.heldElsewhere(time.Now(), hint, true)
				want := reopen
				if end := time.Now().Add(hint); end.After(reopen) {
					want = end
				}
				assert.Equal(t, want, a.rel.reopen, "the later end")
				assert.Equal(t, refused, a.rel.refused, "judged as the first refusal ended it")
				assert.Equal(t, cut, a.rel.epRefused)
			})
		})
	}
}

// TestRenumberLeavesNoTokenAlone: a join carries a token into the gate's
// numbering; none stays none.
func TestRenumberLeavesNoTokenAlone(t *testing.T) {
	a := adaptive{gen: 1, shift: 37}
	for n, want := range map[float64]float64{0: 0, 5: 42, 120: 157} {
		k := token{n: n}
		a.renumber(&k)
		assert.Equal(t, want, k.n, "token %g", n)
		assert.Equal(t, int64(1), k.gen)
	}
}

// TestAdaptiveSendsWaitingInLineMakeAHerd: a refusal with a hint, of a send
// that went alone and was answered with no other out, is a herd's when
// other sends of the scope wait to go (behind the hold it set, at the gate's
// spread): a hold's end lets its waiters go a spread apart, and a server
// that answers within it saw them one at a time, one hold after another,
// with no pace. With none waiting it is a lone caller's, paced by its hints.
func TestAdaptiveSendsWaitingInLineMakeAHerd(t *testing.T) {
	for _, hint := range []time.Duration{time.Second, 3 * time.Second, 200 * time.Millisecond} {
		for _, waiting := range []int64{0, 1, 30} {
			t.Run(fmt.Sprintf("%v, %d waiting", hint, waiting), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var line atomic.Int64
					line.Store(waiting)
					a := adaptive{line: &line}
					for range 3 {
						sent := time.Now()
						a.sent(sent)
						time.Sleep(time.Millisecond)
						a.release(sent, 1, -1)
					}
					sent := time.Now()
					a.sent(sent)
					time.Sleep(time.Millisecond)
					a.answered(time.Now(), sent, 1, true, hint, -1)
					assert.Equal(t, waiting > 0, a.enabled, "paced when others wait")
				})
			})
		}
	}
}
