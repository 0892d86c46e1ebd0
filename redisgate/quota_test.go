package redisgate

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// step is one call to a gate in a quota sequence. Times are offsets from
// the sequence's start.
type step struct {
	op    string        // take, done, hold, nb (NotBefore), pace or sleep
	left  int64         // done: the remaining a response published; -1: none
	at    time.Duration // done: the reset; hold: the hold; sleep: until when
	want  time.Duration // take, nb: the time answered; 0: the zero time
	times int           // take: how many, all answered alike; 0: 1
	soon  bool          // take: a recheck rules.QuotaRecheck after the call, not want
	// done: the send was throttled, not served
	throttled bool
}

func take(want time.Duration, times int) step { return step{op: "take", want: want, times: times} }

// recheck is a take refused while sends in flight may give sends back: it
// is told to ask again rules.QuotaRecheck later, not at the reset.
func recheck(times int) step { return step{op: "take", times: times, soon: true} }
func done(left int64, reset time.Duration) step {
	return step{op: "done", left: left, at: reset}
}
func hold(until time.Duration) step { return step{op: "hold", at: until} }

// paced is a herd's Transport joining the scope's shared pace: the gate
// keeps a pace state (opaque to it) for the scope.
func paced() step { return step{op: "pace"} }

// refused is the answer of a throttled send, which then holds the scope
// until the hint's end.
func refused(until time.Duration) []step {
	return []step{{op: "done", left: -1, throttled: true}, hold(until)}
}

// served is n answers of sends served.
func served(n int) []step {
	s := make([]step, n)
	for i := range s {
		s[i] = done(-1, 0)
	}
	return s
}

// steps joins steps and runs of steps.
func steps(parts ...any) []step {
	var all []step
	for _, p := range parts {
		switch p := p.(type) {
		case step:
			all = append(all, p)
		case []step:
			all = append(all, p...)
		}
	}
	return all
}
func nb(want time.Duration) step    { return step{op: "nb", want: want} }
func sleepTo(at time.Duration) step { return step{op: "sleep", at: at} }

var quotaSequences = []struct {
	name  string
	steps []step
}{
	{"answers out of order", []step{
		// Four sends go out before any quota is known. The server
		// served them in order, leaving 9, 8, 7, 6 of 10; the answers
		// arrive out of order.
		take(0, 4),
		done(7, time.Minute), done(6, time.Minute), done(9, time.Minute), done(8, time.Minute),
		take(0, 6),
		take(time.Minute, 1),
		nb(time.Minute),
	}},
	{"zero left", []step{
		take(0, 1), done(0, 10*time.Second),
		take(10*time.Second, 2), nb(10 * time.Second),
	}},
	{"hold before the quota", []step{
		take(0, 1), done(0, 10*time.Second),
		hold(20 * time.Second),
		take(20*time.Second, 1), nb(20 * time.Second),
	}},
	{"quota before the hold", []step{
		hold(5 * time.Second),
		take(5*time.Second, 1), nb(5 * time.Second),
	}},
	{"reset passes", []step{
		take(0, 1), done(0, time.Second),
		take(time.Second, 1),
		sleepTo(1100 * time.Millisecond),
		take(0, 3), nb(0),
	}},
	{"same figure twice gives a send back, earlier reset wins", []step{
		take(0, 2),
		done(5, 10*time.Second), // one more in flight: 4 left
		done(5, 9*time.Second),  // it was served before: 5
		take(0, 5), take(9*time.Second, 1),
	}},
	{"lower figure sets the count", []step{
		take(0, 3),
		done(10, time.Minute), // 8
		done(4, time.Minute),  // others spent it: 4 - 1
		done(-1, 0),
		take(0, 3), take(time.Minute, 1),
	}},
	{"answers without a quota", []step{
		take(0, 2), done(-1, 0), done(-1, 0),
		take(0, 3), nb(0),
	}},
	{"a past reset is no quota", []step{
		take(0, 1), done(0, -time.Second),
		take(0, 2),
	}},
	{"in flight when the quota comes", []step{
		take(0, 3),
		done(2, time.Minute), // two more in flight: 0 left
		recheck(1), nb(time.Minute),
		done(1, time.Minute), // lower: 1 - 1 in flight
		recheck(1),
		done(-1, 0), // answered without a figure: no send comes back
		take(time.Minute, 1),
	}},
	{"in-flight answers give sends back before the reset", []step{
		take(0, 3),
		done(2, time.Minute), // two more in flight: 0 left
		recheck(2),
		done(3, time.Minute), // served before: its send comes back
		take(0, 1),
		recheck(1), // one set against the figure is still in flight
		done(2, time.Minute),
		take(0, 1),
		take(time.Minute, 1), nb(time.Minute), // none is: the reset
	}},
	{"inferred quota: learned, capped, predicted, forgotten", steps(
		// Throttled windows of a server that serves 2 a window: the
		// first episode runs from the first send, the second from the
		// first reopen, and they agree.
		take(0, 3), served(2), refused(1010*time.Millisecond),
		sleepTo(1010*time.Millisecond),
		take(0, 3), served(2), refused(2020*time.Millisecond),
		sleepTo(2020*time.Millisecond),
		// S is 2 and P 1010ms: the third waits for the predicted window.
		take(0, 2), take(3030*time.Millisecond, 1),
		served(2),
		sleepTo(3030*time.Millisecond),
		take(0, 2), take(4040*time.Millisecond, 1),
		// This window serves one only: a 429 below S forgets S.
		served(1), refused(4500*time.Millisecond),
		sleepTo(4500*time.Millisecond),
		take(0, 3),
	)},
	{"inferred quota: a window of two seconds is learned", steps(
		// The first episode is kept until its hold ends, though that is
		// more than two seconds after it began.
		take(0, 3), served(2), refused(2010*time.Millisecond),
		sleepTo(2010*time.Millisecond),
		take(0, 3), served(2), refused(4020*time.Millisecond),
		sleepTo(4020*time.Millisecond),
		take(0, 2), take(6030*time.Millisecond, 1),
	)},
	{"inferred quota: nothing is learned while the scope's pace is shared", steps(
		// The same throttled windows as the first sequence, but a herd
		// paces the scope through the gate, its first throttle on: the
		// pace tells a window from a bucket, so the gate holds nothing.
		take(0, 3), paced(), served(2), refused(1010*time.Millisecond),
		sleepTo(1010*time.Millisecond),
		take(0, 3), served(2), refused(2020*time.Millisecond),
		sleepTo(2020*time.Millisecond),
		take(0, 3), served(2), refused(3030*time.Millisecond),
		sleepTo(3030*time.Millisecond),
		take(0, 4),
	)},
	{"inferred quota: a scope idle for a whole window forgets S", steps(
		// A server that serves 1 a window: S is 1 and P 1010ms after
		// these two windows, and the next window opens at 3030ms.
		take(0, 2), served(1), refused(1010*time.Millisecond),
		sleepTo(1010*time.Millisecond),
		take(0, 2), served(1), refused(2020*time.Millisecond),
		// No send in the window from 2020ms, nor after: the state is
		// forgotten, though redisgate's hash has not expired yet (its
		// expiry has a margin of a second).
		sleepTo(3600*time.Millisecond),
		take(0, 5),
	)},
	{"inferred quota: a herd throttled early in its window learns", steps(
		// The window runs out at once, and the 429 comes 200ms later with
		// a hint to the window's end: the server's hold explains the
		// period, and S is 2, P 1200ms.
		take(0, 3), served(2), sleepTo(200*time.Millisecond), refused(1200*time.Millisecond),
		sleepTo(1200*time.Millisecond),
		take(0, 3), served(2), sleepTo(1400*time.Millisecond), refused(2400*time.Millisecond),
		sleepTo(2400*time.Millisecond),
		take(0, 2), take(3600*time.Millisecond, 1),
	)},
	{"inferred quota: a client's own rhythm is not the window", steps(
		// A client that sends a burst every 2.5s, each throttled at once
		// with a hint of a second: its episodes from the second on agree,
		// but each throttle comes 1.5s after its reopen, so the server's
		// hold explains less than half of the period. Nothing is learned.
		// A long request, taken first and left unanswered, keeps the
		// scope busy between the bursts (idle, it would forget its
		// episodes). The gates take an answer to be of the oldest send
		// unanswered, so from the second burst on, one of its answers
		// goes to a send of the burst before, and an episode counts 1
		// served: without the check, S would be 1 and P 2.5s.
		take(0, 1),
		take(0, 3), served(2), refused(1000*time.Millisecond),
		sleepTo(2500*time.Millisecond),
		take(0, 3), served(2), refused(3500*time.Millisecond),
		sleepTo(5000*time.Millisecond),
		take(0, 3), served(2), refused(6000*time.Millisecond),
		sleepTo(6000*time.Millisecond),
		take(0, 4),
	)},
	{"inferred quota: sub-second hints spanning a second are not learned", steps(
		// Hints of 500ms, each 600ms into an episode: periods of 1100ms
		// that agree, but the holds explain less than half of them. They
		// are the adaptive limiter's.
		take(0, 2), served(2), sleepTo(600*time.Millisecond),
		take(0, 1), refused(1100*time.Millisecond),
		sleepTo(1100*time.Millisecond),
		take(0, 2), served(2), sleepTo(1700*time.Millisecond),
		take(0, 1), refused(2200*time.Millisecond),
		sleepTo(2200*time.Millisecond),
		take(0, 4),
	)},
	{"answered before the quota was known", []step{
		take(0, 2), done(-1, 0),
		done(3, time.Minute), // nothing in flight: 3
		take(0, 3), take(time.Minute, 1),
	}},
}

// TestQuotaMatchesMemGate runs each sequence against heed's in-memory gate
// and a redisgate, and wants both to answer as the sequence says.
func TestQuotaMatchesMemGate(t *testing.T) {
	s := startRedis(t)
	for _, seq := range quotaSequences {
		t.Run(seq.name, func(t *testing.T) {
			t.Parallel() // each sleeps for itself
			gates := []struct {
				name string
				g    heed.QuotaGate
			}{
				{"memGate", heed.NewGate(heed.WithInferredQuota(true)).(heed.QuotaGate)},
				// heed's own gate has no first contact (contact_test.go).
				{"redisgate", newGate(t, s, WithPrefix(t.Name()+":"), WithFirstContact(0, 0))},
			}
			start := time.Now().Truncate(time.Millisecond)
			at := func(d time.Duration) time.Time {
				if d == 0 {
					return time.Time{}
				}
				return start.Add(d)
			}
			for i, st := range seq.steps {
				where := fmt.Sprintf("step %d: %+v", i, st)
				if st.op == "sleep" {
					time.Sleep(time.Until(start.Add(st.at)))
					continue
				}
				for _, g := range gates {
					ctx := t.Context()
					switch st.op {
					case "take":
						for n := range max(st.times, 1) {
							before := time.Now()
							got, err := g.g.Take(ctx, "s")
							require.NoError(t, err)
							if st.soon {
								// Redis has the time in milliseconds.
								early := before.Truncate(time.Millisecond).Add(rules.QuotaRecheck)
								late := time.Now().Add(rules.QuotaRecheck)
								assert.True(t, !got.Before(early) && !got.After(late), "%s: %s: take %d: got %v, want a recheck in [%v, %v]", g.name, where, n, got, early, late)
							} else {
								assert.True(t, at(st.want).Equal(got), "%s: %s: take %d: got %v", g.name, where, n, got)
							}
						}
					case "done":
						var q *heed.Quota
						if st.left >= 0 {
							q = &heed.Quota{Remaining: st.left, Reset: start.Add(st.at)}
						}
						require.NoError(t, g.g.Done(ctx, "s", q, !st.throttled))
					case "hold":
						require.NoError(t, g.g.Hold(ctx, "s", start.Add(st.at)))
					case "pace":
						require.NoError(t, g.g.(heed.PaceGate).Pace(ctx, "s", func([]byte) []byte { return []byte("a pace") }))
					case "nb":
						got, err := g.g.NotBefore(ctx, "s")
						require.NoError(t, err)
						if st.want == 0 {
							assert.False(t, got.After(time.Now()), "%s: %s: got %v", g.name, where, got)
						} else {
							assert.True(t, at(st.want).Equal(got), "%s: %s: got %v", g.name, where, got)
						}
					default:
						t.Fatalf("unknown op %q", st.op)
					}
				}
			}
		})
	}
}

// TestSendsInFlightAge: a send whose answer never comes stops counting
// after between one and two lifetimes, so that a dead process does not
// shrink the fleet's quota for ever.
func TestSendsInFlightAge(t *testing.T) {
	s := startRedis(t)
	const life = time.Minute
	// The gates read a clock the test moves: from the start of a bucket.
	clock := time.Now().Truncate(life).Add(time.Millisecond)
	now := func() time.Time { return clock }
	// The first contact, which would admit the dead process two of its
	// three sends, is off: it is tested in contact_test.go.
	g := newGate(t, s, WithMaxInFlight(life), WithFirstContact(0, 0))
	dead := newGate(t, s, WithMaxInFlight(life), WithFirstContact(0, 0)) // a process that dies mid-request
	g.now, dead.now = now, now
	// Their clock is the test's, up to a minute off Redis's: the buckets
	// are counted on it, so neither measures it against Redis's.
	neverMeasure(g)
	neverMeasure(dead)
	ctx := t.Context()
	for range 3 {
		at, err := dead.Take(ctx, "s")
		require.NoError(t, err)
		require.True(t, at.IsZero())
	}
	// free learns a quota of 10 and returns how many sends it then
	// admits, answering them, and forgets the quota.
	free := func() int {
		at, err := g.Take(ctx, "s")
		require.NoError(t, err)
		require.True(t, at.IsZero())
		require.NoError(t, g.Done(ctx, "s", &heed.Quota{Remaining: 10, Reset: clock.Add(time.Second)}, true))
		n := 0
		for {
			at, err := g.Take(ctx, "s")
			require.NoError(t, err)
			if !at.IsZero() {
				break
			}
			n++
		}
		for range n {
			require.NoError(t, g.Done(ctx, "s", nil, true))
		}
		require.NoError(t, g.client.HSet(ctx, g.key("s"), "k", 0).Err())
		return n
	}
	steps := []struct {
		after time.Duration // since the dead sends
		want  int
		why   string
	}{
		{0, 10 - 3, "the dead process's three sends count"},
		{life - 2*time.Millisecond, 10 - 3, "for a lifetime"},
		{life + 30*time.Second, 10 - 3, "and into the next"},
		{2*life - 2*time.Millisecond, 10 - 3, "up to two lifetimes"},
		{2 * life, 10, "not after two"},
	}
	start := clock
	for _, st := range steps {
		clock = start.Add(st.after)
		assert.Equal(t, st.want, free(), "%v: %s", st.after, st.why)
	}
}

// TestConcurrentTakesSpendTheQuotaOnce: goroutines of several gates, as of
// several processes, together take exactly the sends a quota allows.
func TestConcurrentTakesSpendTheQuotaOnce(t *testing.T) {
	s := startRedis(t)
	gates := []*gate{newGate(t, s), newGate(t, s), newGate(t, s), newGate(t, s)}
	ctx := t.Context()
	reset := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	at, err := gates[0].Take(ctx, "s")
	require.NoError(t, err)
	require.True(t, at.IsZero())
	require.NoError(t, gates[0].Done(ctx, "s", &heed.Quota{Remaining: 50, Reset: reset}, true))

	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			g := gates[i%len(gates)]
			for {
				at, err := g.Take(ctx, "s")
				if !assert.NoError(t, err) {
					return
				}
				if !at.IsZero() {
					assert.Equal(t, reset, at, "refused until the reset")
					return
				}
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(50), admitted.Load())
}
