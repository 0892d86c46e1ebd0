// Pacing tokens: a paced send's place in its scope's pace, taken before
// it goes, waited for in turn, and given back when it does not go.

package heed

import (
	"math"
	"time"
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
	a.issued++
	return a.issued, a.until(a.issued)
}

// due returns how long the send holding token k must still wait at now,
// and may give it another token (wait).
func (a *adaptive) due(k *token, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.renumber(k)
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
// and its wait. A send still waiting on a token that lapsed at the reopen
// of the release's episode takes another, in the reopen's line.
func (a *adaptive) wait(k float64, now time.Time) (float64, time.Duration) {
	if !a.enabled {
		return k, 0
	}
	a.begin(now)
	a.refill(now)
	if a.lapsed(k) {
		a.issued++
		k = a.issued
	}
	return k, a.until(k)
}

// lapsed reports whether token k had come due when the release's current
// episode began, at its reopen (rel.lapsed): the reopen counted its send
// among those that went before it, and let its burst go past them. Tokens
// come due while the scope is held, by the rate and by those given back
// by sends that found the hold; a send whose token came due in the last
// of its rechecks before the reopen wakes after it. Went on that token,
// it would go on top of the burst; it takes another instead, and, not
// going, gives back nothing.
func (a *adaptive) lapsed(k float64) bool {
	return a.long && k > 0 && k <= a.rel.lapsed
}

// renumber carries token k into the current numbering, after a join: a
// token of the one before is shift further on in it. None (0) stays none.
func (a *adaptive) renumber(k *token) {
	if k.gen != a.gen {
		if k.n > 0 {
			k.n += a.shift
		}
		k.gen = a.gen
	}
}

// until is the wait for token k at the current rate.
func (a *adaptive) until(k float64) time.Duration {
	if a.granted >= k {
		return 0
	}
	ahead, least := k-a.granted, time.Duration(0)
	if r := &a.rel; a.spreading() {
		// Within the first reopen's spread: tokens come at its rate until
		// its end, then at the pace's.
		fast, rest := r.spreadRate(), r.spread.Sub(a.lastFill).Seconds()
		wait := ahead / fast
		if left := rest * fast; ahead > left {
			wait = rest + (ahead-left)/a.fillRate
		}
		return time.Duration(math.Min(math.Ceil(wait*float64(time.Second)), float64(24*time.Hour)))
	}
	if r := &a.rel; !r.asking.IsZero() {
		// The reopen's answer may come at any moment, and let go up to
		// what the reopen would have: a token within that asks again
		// soon; one past it waits at least for the rate beyond it.
		ahead, least = k-(a.granted+r.asked-1), askRecheck
	}
	// At most a day: a wait that long defers whatever the caller's time.
	return max(least, time.Duration(math.Min(math.Ceil(ahead/a.fillRate*float64(time.Second)), float64(24*time.Hour))))
}

// cancel gives back token k, whose send does not go: the next one comes a
// token sooner. One that lapsed at the reopen gives back nothing.
func (a *adaptive) cancel(k token) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.renumber(&k)
	if !a.sharing() {
		a.giveBack(k.n)
		return
	}
	a.through(func() { a.giveBack(k.n) }, nil)
}

// giveBack is cancel's work on the pace.
func (a *adaptive) giveBack(k float64) {
	if !a.enabled || a.lapsed(k) {
		return
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

// recheck returns how long a send whose token is wait away sleeps before
// it asks due again: paceRecheck at most, and, while the release's rate
// climbs by steps (unfitted), half the wait, askRecheck at least. A
// doubling meanwhile brings the token sooner: a send that slept its whole
// wait would go late, a moment before or after the sends whose tokens the
// doubled rate brought in turn, too close to them for a bucket. Not on a
// pace shared through a gate, where each recheck is a call to the gate.
func (a *adaptive) recheck(wait time.Duration) time.Duration {
	a.mu.Lock()
	ramp := a.long && a.rel.on && !a.rel.fitted && !a.sharing()
	a.mu.Unlock()
	if ramp {
		wait = max(wait/2, min(wait, askRecheck))
	}
	return min(wait, paceRecheck)
}
