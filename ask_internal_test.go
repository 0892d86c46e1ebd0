package heed

// Tests of the reopen's question (release.go: begin, answer; tokens.go:
// until, giveBack), driving the adaptive limiter as
// adaptive_internal_test.go does (firstHerd). headroom_test.go runs herds
// against a sliding window that asks it.

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ask runs a herd of 8 served and 4 refused with their quota spent, waits
// out the hold, and sends the reopen's question. It returns when the
// question went.
func (a *adaptive) ask(t *testing.T) time.Time {
	a.firstHerd(8, 4, 0)
	require.True(t, a.rel.quoted)
	time.Sleep(time.Second)
	at := time.Now()
	require.Zero(t, a.waitAndSend(at), "the hold is over")
	require.False(t, a.rel.asking.IsZero(), "the reopen asks")
	require.Greater(t, a.rel.asked, 1.0)
	require.InDelta(t, a.issued, a.granted, 1e-9, "the question alone went")
	return at
}

// TestReopenLetsGoWhatItsQuestionFinds: the question's answer lets go the
// room it published, no more than the reopen would have without asking,
// and at once; a refusal of it, with any hint, lets go nothing more; a
// question that ends unsent, or served with no room, leaves the reopen to
// releaseAsk, after which it lets go what it would have without asking.
func TestReopenLetsGoWhatItsQuestionFinds(t *testing.T) {
	const all = -1 // what the reopen would have let go without asking
	tests := []struct {
		name   string
		end    func(a *adaptive, sent time.Time)
		asking bool    // the question still out once its send ended
		more   float64 // sends let go beside it, at once; all: asked - 1
	}{
		{"served with room 3: three more", func(a *adaptive, sent time.Time) { a.release(sent, 1, 3) }, false, 3},
		{"served with no room: none more", func(a *adaptive, sent time.Time) { a.release(sent, 1, 0) }, false, 0},
		{"served with room past the burst: the burst", func(a *adaptive, sent time.Time) { a.release(sent, 1, 100) }, false, all},
		{"refused with a whole second: none more", func(a *adaptive, sent time.Time) {
			a.answered(time.Now(), sent, 1, true, time.Second, 0)
		}, false, 0},
		{"refused with no hint: none more", func(a *adaptive, sent time.Time) {
			a.answered(time.Now(), sent, 1, true, 0, -1)
		}, false, 0},
		{"unsent: left to releaseAsk", func(a *adaptive, sent time.Time) { a.release(sent, 0, -1) }, true, 0},
		{"served with no room published: left to releaseAsk", func(a *adaptive, sent time.Time) { a.release(sent, 1, -1) }, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a adaptive
				sent := a.ask(t)
				asked := a.rel.asked
				time.Sleep(2 * time.Millisecond)
				tt.end(&a, sent)
				a.mu.Lock()
				defer a.mu.Unlock()
				assert.Equal(t, tt.asking, !a.rel.asking.IsZero(), "the question out")
				want := tt.more
				if want == all {
					want = asked - 1
				}
				assert.InDelta(t, want, a.granted-a.issued, 0.1, "let go at once")
				if !tt.asking {
					return
				}
				a.refill(sent.Add(releaseAsk - time.Millisecond))
				assert.InDelta(t, 0, a.granted-a.issued, 1e-9, "nothing before releaseAsk")
				a.refill(sent.Add(releaseAsk))
				assert.True(t, a.rel.asking.IsZero(), "no answer within releaseAsk")
				assert.InDelta(t, math.Min(asked-1, a.capacity), a.granted-a.issued, 1e-9, "the burst it would have let go")
			})
		})
	}
}

// TestSendsBehindTheQuestionWaitTheirTurn: while the question is out, a
// send whose token its answer may let go asks again every askRecheck; one
// past what the answer could let go waits at least for the rate beyond
// it, so that a caller whose time cannot cover that defers at once; and a
// send that gives its token back lets no send go beside the question, but
// the line moves up by it once the answer comes.
func TestSendsBehindTheQuestionWaitTheirTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a adaptive
		sent := a.ask(t)
		now := time.Now()
		n := int(a.rel.asked) + 5
		waits := make([]time.Duration, n)
		var last token
		for i := range waits {
			last, waits[i] = a.reserve(now)
		}
		for i, w := range waits[:int(a.rel.asked)-1] {
			assert.Equal(t, askRecheck, w, "token %d: within the answer's reach", i)
		}
		for i := int(a.rel.asked) - 1; i < n; i++ {
			past := float64(i + 2 - int(a.rel.asked))
			assert.Equal(t, max(askRecheck, time.Duration(math.Ceil(past/a.fillRate*float64(time.Second)))), waits[i], "token %d: past it", i)
		}
		assert.Greater(t, waits[n-1], askRecheck)
		granted := a.granted
		a.cancel(last)
		assert.InDelta(t, granted, a.granted, 1e-9, "a token given back lets nothing go beside the question")
		time.Sleep(2 * time.Millisecond)
		a.release(sent, 1, 2)
		assert.InDelta(t, granted+2+1, a.granted, 1e-9, "the answer lets its room go, and the token given back is made up")
	})
}

// TestReopenAsksOnlyWhereItsAnswerCanCome: the reopen asks a limit that
// published its quota spent; not one whose last answer took releaseAsk or
// more (its answer would come too late), nor a known window, nor a pace
// shared through a gate, whose other Transports would ask the gate every
// askRecheck while the question is out; those let the burst go at once.
func TestReopenAsksOnlyWhereItsAnswerCanCome(t *testing.T) {
	tests := []struct {
		name  string
		new   func() *adaptive
		after func(a *adaptive) // before the hold ends
		asks  bool
	}{
		{"quick answers: asks", func() *adaptive { return &adaptive{} }, func(*adaptive) {}, true},
		{"answers in 200 ms: lets the burst go", func() *adaptive { return &adaptive{} }, func(a *adaptive) { a.rel.took = 200 * time.Millisecond }, false},
		{"a known window: lets the burst go", func() *adaptive { return &adaptive{} }, func(a *adaptive) { a.rel.window = true }, false},
		{"a shared pace: lets the burst go", func() *adaptive {
			return &adaptive{shared: &sharedPace{gate: NewGate().(PaceGate), scope: "s"}}
		}, func(*adaptive) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := tt.new()
				a.firstHerd(8, 4, 0)
				require.True(t, a.rel.quoted)
				a.mu.Lock()
				tt.after(a)
				a.mu.Unlock()
				time.Sleep(time.Second)
				require.Zero(t, a.waitAndSend(time.Now()), "the hold is over")
				a.mu.Lock()
				defer a.mu.Unlock()
				assert.Equal(t, tt.asks, !a.rel.asking.IsZero(), "asks")
				if !tt.asks {
					// Over the first reopen's spread at most: the 10 ms
					// the herd's refusals took to come.
					time.Sleep(10 * time.Millisecond)
					a.refill(time.Now())
					assert.GreaterOrEqual(t, a.granted-a.issued, a.rel.let-1, "the burst goes, its first already gone")
				}
			})
		})
	}
}
