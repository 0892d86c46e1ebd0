// Pacing tokens: a paced send's place in its scope's pace, taken before
// it goes, waited for in turn, and given back when it does not go.

package heed

import (
	"math"
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// reserve takes a token for a send about to go at now, and returns it
// and how long the send must wait for it: 0 when it may go at once. Sends
// that reserve together go one token apart, in turn, not at one instant.
// A send told to wait asks due again after at most paceRecheck, since a
// rate that climbs meanwhile brings its token sooner; one that does not
// go after all gives its token back with cancel.
func (a *adaptive) reserve(now time.Time) (token, time.Duration) {
	// awaiting first: a join sets active before it clears awaiting, so a
	// send that finds awaiting clear finds active set if it joined.
	if !a.awaiting.Load() && !a.active.Load() {
		return token{}, 0 // neither on nor joined: take would give no wait
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.awaiting.Load() && !now.Before(a.awaitFrom) {
		// The first send at or after the end of a hold found elsewhere,
		// when the gate had no pace yet: the gate's pace, started since,
		// is joined, and this send takes a token in it. Asked once, and
		// not by a send long after that hold's end.
		if now.Before(a.awaitFrom.Add(paceHintLimit)) {
			a.join(now, 0, true)
		}
		a.awaiting.Store(false)
	}
	var k float64
	var wait time.Duration
	if !a.sharing() {
		k, wait = a.take(now)
	} else {
		k, wait = a.takeShared(now)
	}
	return token{k, a.gen}, wait
}

// token is a pacing token: its number, in the numbering gen counts.
type token struct {
	n   float64
	gen int64
}

// takeShared is take on the gate's pace. (Apart, so that the closure costs
// nothing on the path that does not share.)
func (a *adaptive) takeShared(now time.Time) (k float64, wait time.Duration) {
	a.through(func() { k, wait = a.take(now) }, nil)
	return k, wait
}

// take is reserve's work on the pace.
func (a *adaptive) take(now time.Time) (float64, time.Duration) {
	if !a.enabled {
		return 0, 0
	}
	a.begin(now)
	a.refill(now)
	if a.held(now) {
		return 0, a.holdWait(now)
	}
	a.issued++
	return a.issued, a.until(a.issued)
}

// due returns how long the send holding token k must still wait at now,
// and may give it another token (wait).
func (a *adaptive) due(k *token, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if k.gen != a.gen {
		k.n, k.gen = k.n+a.shift, a.gen
	}
	var wait time.Duration
	if !a.sharing() {
		k.n, wait = a.wait(k.n, now)
	} else {
		k.n, wait = a.waitShared(k.n, now)
	}
	return wait
}

// waitShared is wait on the gate's pace, read, and written only when the
// wait starts an episode (begin), which the episode's answers are
// counted against, or gives the send another token.
func (a *adaptive) waitShared(k float64, now time.Time) (next float64, wait time.Duration) {
	starts := false
	a.through(func() {
		starts = a.enabled && a.rel.begins(now)
		next, wait = a.wait(k, now)
	}, func() bool { return starts || next != k })
	return next, wait
}

// wait is due's work on the pace: the token the send holds from now on,
// and its wait. While the release holds the scope, a send holds no token
// and waits for the reopen (holdWait); once it is over, a send on a
// token from before it (lapsed) takes another, in the reopen's line.
func (a *adaptive) wait(k float64, now time.Time) (float64, time.Duration) {
	if !a.enabled {
		return k, 0
	}
	a.begin(now)
	a.refill(now)
	if a.held(now) {
		return 0, a.holdWait(now)
	}
	if a.long && k <= a.rel.lapsed {
		a.issued++
		k = a.issued
	}
	return k, a.until(k)
}

// held reports whether the release holds the scope at now: its hold, the
// latest a throttle of its burst set, has not ended. No token is taken
// or given back meanwhile. What the reopen lets go at once, and the rate
// past it, are known only then; a send that took a token would wait on a
// rate the reopen replaces, and could wake after the reopen to go on top
// of the burst it let go.
func (a *adaptive) held(now time.Time) bool {
	return a.long && a.rel.on && now.Before(a.rel.reopen)
}

// holdWait is the wait at now of a send that the release holds: to the
// reopen, and a spread, as a send waiting at the gate has (waitForGate),
// so that the reopen's line forms in the order its sends come, not at
// one instant.
func (a *adaptive) holdWait(now time.Time) time.Duration {
	hold := a.rel.reopen.Sub(a.lastThrottle)
	return a.rel.reopen.Sub(now) + rules.RandUpTo(min(hold/50, maxGateSpread))
}

// until is the wait for token k at the current rate.
func (a *adaptive) until(k float64) time.Duration {
	if a.granted >= k {
		return 0
	}
	ahead, least := k-a.granted, time.Duration(0)
	if r := &a.rel; !r.asking.IsZero() {
		// The reopen's answer may come at any moment, and let go up to
		// what the reopen would have: a token within that asks again
		// soon; one past it waits at least for the rate beyond it.
		ahead, least = k-(a.granted+r.asked-1), askRecheck
	}
	// At most a day: a wait that long defers whatever the caller's time.
	return max(least, time.Duration(math.Min(math.Ceil(ahead/a.fillRate*float64(time.Second)), float64(24*time.Hour))))
}

// cancel gives back a token whose send does not go: the next one comes a
// token sooner.
func (a *adaptive) cancel() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.sharing() {
		a.giveBack()
		return
	}
	a.through(a.giveBack, nil)
}

// giveBack is cancel's work on the pace.
func (a *adaptive) giveBack() {
	if !a.enabled || a.held(time.Now()) {
		return // held: the reopen's line starts afresh
	}
	if !a.rel.asking.IsZero() {
		// While the reopen's question is out, a token given back would
		// let a send go beside it: it is made up once the question ends
		// (unask), so that the line still moves up by one.
		a.rel.given++
		return
	}
	a.granted = math.Min(a.granted+1, a.issued+a.capacity)
}

// paceRecheck is the longest a paced send sleeps before it asks again
// whether its token has come.
const paceRecheck = 50 * time.Millisecond
