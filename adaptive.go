// The adaptive limiter: a scope's client-side pace after it is throttled
// with sends in flight, a token bucket whose rate falls on a throttle and
// climbs back along a cubic curve.

package heed

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// adaptive is a scope's client-side rate limiter, after the CUBIC-based
// adaptive mode of the AWS SDKs. It is off until a send of the scope that
// was in flight beside others of it is throttled (paced). Then it paces
// sends with a token bucket whose rate starts at 0.7 × the rate the scope
// was sending at, and grows back along a cubic curve, past that rate,
// until the next throttle. Its bucket holds up to a second of sends, so a
// scope that waited at the gate may send a burst when the gate opens, as a
// fixed-window server allows, while a token-bucket server, which refills
// slowly, sees a steady rate and few 429s. After a refusal with no hint it
// holds a quarter second (blindCapacity): the server's burst is not known.
type adaptive struct {
	mu sync.Mutex

	active atomic.Bool // enabled, read without the lock
	flight flight      // this Transport's sends gone and answered

	sends atomic.Bool  // this Transport has sent in the scope
	peak  atomic.Int64 // the most of its sends in flight at once, ever: 1, a lone caller
	// herdAt is when a send of this Transport last went with another in
	// flight, by mono: a send out then was in a herd
	herdAt atomic.Int64

	// crowded: a hold of the scope set elsewhere was found while the pace
	// was this Transport's own. Others send to the limit, so the drain its
	// room shows is not this Transport's to pace at (release.go).
	crowded bool
	// provisional is the rate the first throttle set, for its hold only
	// (release.go).
	provisional float64

	ceil ceiling // the learned cap on sends in flight (concurrency.go)

	// shared keeps the pace in the gate, for every Transport that shares
	// it, once joined (pace.go); nil: the pace is this Transport's alone.
	shared *sharedPace
	joined bool
	// awaiting: a hold found elsewhere found no pace started in the gate,
	// the Transport refused having not yet written it, so the first send
	// from awaitFrom, the hold's end, asks to join it again, within
	// paceHintLimit of it (reserve).
	awaiting  atomic.Bool
	awaitFrom time.Time
	// downUntil: the gate's last pace call failed, and this copy paces
	// until then; zero: the gate's answers
	downUntil time.Time
	// gen counts the numberings of tokens: a join starts the gate's, and
	// a token of the one before is shift further on in it.
	gen   int64
	shift float64

	// The measured send rate, in half-second buckets, smoothed: this
	// Transport's. A bucket's sends are read from the sends gone (flight),
	// so a send counts in it without a lock or a write of its own, but for
	// the first of each bucket, which closes the one before under the lock.
	bucket   atomic.Int64 // index of the current half second; 0: none yet
	latest   atomic.Int64 // the latest send before warm, as a mono count
	earliest atomic.Int64 // the earliest send before warm, or calm call's (backdate), as a mono count; 0: none
	warm     atomic.Bool  // a whole half second has been measured
	mark     int64        // the sends gone before the current bucket's
	opened   int64        // the first send measured, by mono
	measured float64      // the rate, once warm

	// recent holds when this Transport's latest served sends went, in
	// Unix nanoseconds, up to recentKeep of them, oldest at recentAt once
	// full: the first episode's burst is counted from it. Kept once the
	// Transport has had two sends of the scope in flight: a lone caller's
	// start no pace.
	recent   []int64
	recentAt int

	paceState

	// queued counts this Transport's sends waiting at the gate for the
	// scope's other sends in flight to be answered (redisgate's first
	// contact): they are a herd, whose sends the gate lets go a few at a
	// time. lined: one ever did, a herd as a peak of two is, though the
	// peak, which the wire check reads for a herd forming, is left alone.
	queued atomic.Int64
	lined  atomic.Bool
	// line counts the scope's sends waiting to go (scopeLocal.waiting):
	// behind a hold, the pace, or a slot. Nil: none are counted.
	line *atomic.Int64
}

// paceState is what the limiter paces by: this Transport's own, or a copy
// of the one a gate keeps for all who share it (pace.go).
type paceState struct {
	enabled  bool
	fillRate float64 // sends a second
	capacity float64
	// Tokens are numbered: issued have been handed out, granted have come
	// in, and a send holding token k may go once granted ≥ k. Tokens left
	// are granted − issued, at most capacity; waiting sends are issued −
	// granted.
	issued   float64
	granted  float64
	lastFill time.Time

	floor        float64 // one send per the last throttle's hint
	lastMax      float64 // the rate when last throttled
	lastThrottle time.Time
	k            float64 // seconds for the cubic to climb back to lastMax
	// cut is the last token granted when the cubic last cut the rate: a
	// send that went on it or before, or on none, went before the cut
	// took effect, and its refusal tells of the burst already cut for.
	cut float64

	long bool    // the last throttle that set the pace had a hint of a second or more
	rel  release // the rule for such hints (release.go)
}

// blindCapacity is the share of a second of the pace that its bucket
// holds after a refusal with no hint.
const blindCapacity = 0.25

// paceHintLimit is the shortest hint that the gate alone answers: a
// throttle with such a hint does not lower the pace.
const paceHintLimit = time.Second

// Adaptive limiter constants, as in the AWS SDKs.
const (
	adaptiveBeta    = 0.7 // rate kept on a throttle
	adaptiveC       = 0.4 // the cubic's scale
	adaptiveSmooth  = 0.8 // weight of the newest measured rate
	adaptiveMinRate = 0.5 // sends a second, at the least
	adaptiveBucket  = 2   // measured-rate buckets a second
)

// sent records a send going out at now, and returns its level: the sends
// of the scope in flight, itself included.
// It takes no lock but once a half second.
func (a *adaptive) sent(now time.Time) int64 {
	level, _ := a.sentAt(now, mono(now))
	return level
}

// sentAt is sent, with now's mono count; rose reports that the send took
// the scope's peak to a new high, of two or more: a herd forming, whose
// send may need a connection of its own. The peak is read before the send
// is counted, so that no such send is missed while others of the herd
// raise the peak meanwhile: one that is not a new high may be told it is,
// which costs it a check, never the reverse.
func (a *adaptive) sentAt(now time.Time, at int64) (level int64, rose bool) {
	before := a.peak.Load()
	level, gone := a.flight.add()
	rose = level > 1 && level > before
	if level > 1 {
		a.herdAt.Store(at)
	}
	a.measure(now, at, gone)
	a.reached(level)
	return level, rose
}

// queue records a send waiting at now for the gate to admit it while the
// scope's other sends are in flight (d 1), or done waiting (d -1). A send
// that waits so makes the scope's sends a herd.
func (a *adaptive) queue(now time.Time, d int64) {
	if a.queued.Add(d) > 0 && d > 0 {
		a.herdAt.Store(mono(now))
		if !a.lined.Load() {
			a.lined.Store(true)
		}
	}
}

// waiting reports whether sends of the scope wait to go: behind a hold,
// the pace or a slot. A refusal answered while they do is a herd's,
// however apart its sends went: a hold's end lets its waiters go a spread
// apart, and a server that answers within the spread sees them one at a
// time.
func (a *adaptive) waiting() bool { return a.line != nil && a.line.Load() > 0 }

// herded reports whether this Transport's sends of the scope were ever a
// herd: two in flight at once, or one waiting at the gate for others.
func (a *adaptive) herded() bool { return a.peak.Load() > 1 || a.lined.Load() }

// adopted counts in flight a calm call's send (calm.go), made or to be
// made before the scope was registered.
func (a *adaptive) adopted() { a.reached(a.flight.out()) }

// reached records that the scope has sent, and that level of its sends
// were in flight at once.
func (a *adaptive) reached(level int64) {
	if !a.sends.Load() {
		a.sends.Store(true)
	}
	for {
		peak := a.peak.Load()
		if level <= peak || a.peak.CompareAndSwap(peak, level) {
			return
		}
	}
}

// backdate takes at, by mono, as the scope's first send if it is earlier
// than the first the limiter measured, or none was: an adopted calm call's
// (calm.go), which the limiter did not measure.
func (a *adaptive) backdate(at int64) {
	if at == 0 {
		return
	}
	a.lower(at)
}

// refill grants the tokens the rate brought since the last fill, up to
// capacity; none while the reopen's question is out (begin), until
// releaseAsk has passed without an answer.
func (a *adaptive) refill(now time.Time) {
	if now.Before(a.lastFill) {
		// A send's clock read before it took the lock: filled to a later
		// time already, and granting again from now would count the
		// time between twice.
		return
	}
	if r := &a.rel; !r.asking.IsZero() {
		if now.Before(r.asking.Add(releaseAsk)) {
			a.lastFill = now
			return
		}
		a.answer(now, -1)
	}
	if r := &a.rel; a.spreading() {
		// The first reopen's burst comes due over its spread, at its own
		// rate; the pace's from the spread's end.
		end := now
		if r.spread.Before(end) {
			end = r.spread
		}
		if d := end.Sub(a.lastFill).Seconds(); d > 0 {
			a.granted = math.Min(a.issued+a.capacity, a.granted+d*r.spreadRate())
		}
		a.lastFill = end
	}
	if d := now.Sub(a.lastFill).Seconds(); d > 0 {
		a.granted = math.Min(a.issued+a.capacity, a.granted+d*a.fillRate)
	}
	a.lastFill = now
}

// spreading reports whether the first reopen's burst is still coming due
// over its spread (release.spread), as of the last fill.
func (a *adaptive) spreading() bool {
	r := &a.rel
	return a.long && !r.firstEp && r.let > 1 && r.spread.After(r.epStart) && a.lastFill.Before(r.spread)
}

// release accounts for a send that ends without a throttle: delivered, or
// deferred before it was written. room is what its answer published of
// the scope's quota, -1 nothing (answered). It reads the clock only when
// the limiter is on: off, the answer's time teaches it nothing.
func (a *adaptive) release(sent time.Time, level, room int64) {
	if !a.active.Load() && !a.herded() {
		// A lone caller's: it has nothing to record (served), and no
		// limiter turns on without sends in flight beside it.
		a.flight.sub()
		return
	}
	if !a.active.Load() {
		// Under the lock, so that a limiter turning on meanwhile, which
		// counts the served sends as those gone and no longer in flight,
		// counts this one either there or in answered, not in neither.
		a.mu.Lock()
		if !a.active.Load() {
			a.flight.sub() // all answered does when off
			if level > 0 {
				a.served(sent)
			}
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
	}
	a.answered(time.Now(), sent, level, false, 0, room)
}

// answered records the answer to an attempt sent at sent: throttled or
// not, and the server's hint, if it gave one. Only a throttle of an attempt
// sent after the last throttle lowers the rate, so that one burst of 429s
// counts once. A throttle with a hint sets the pace to one send per hint,
// the pace the server itself named; one without, to 0.7 of the rate the
// scope was sending at.
//
// A throttle with no hint that the learned cap takes (concurrency.go)
// leaves the rate alone; answered then reports true, and the request waits
// for a slot rather than backing off. level is the send's, from sent; room
// is what the answer published of the scope's quota, the sends it takes
// before the quota's reset, or -1 when it published none.
func (a *adaptive) answered(now, sent time.Time, level int64, throttled bool, hint time.Duration, room int64) bool {
	return a.answeredOn(now, sent, level, throttled, hint, room, token{n: math.Inf(1)})
}

// answeredOn is answered for a send that went on pacing token k (its n 0:
// on none; +Inf: not known, taken as paced after every cut).
func (a *adaptive) answeredOn(now, sent time.Time, level int64, throttled bool, hint time.Duration, room int64, k token) bool {
	others := a.flight.sub()
	a.mu.Lock()
	defer a.mu.Unlock()
	if throttled {
		// A reopen's question refused, or a send that went with or after
		// it: the limit has no room to let the burst go into. (A refusal
		// of a send from before the reopen tells of the hold just over.)
		if !a.rel.asking.IsZero() && !sent.Before(a.rel.asking) {
			a.unask()
		}
		if hint == 0 && others > 0 && a.ceil.refused(level, sent, now, &a.flight) {
			a.active.Store(true)
			return true
		}
	} else if a.ceil.on.Load() {
		a.ceil.answered(level, now.Sub(sent), now)
	}
	if a.ceil.on.Load() {
		defer a.ceil.answer()
	}
	if !throttled && level > 0 {
		a.served(sent)
		a.rel.took = now.Sub(sent)
	}
	if throttled && hint >= paceHintLimit && (a.enabled || others > 0 || a.herded()) {
		a.join(now, hint, false)
	}
	a.renumber(&k) // of the numbering before the last join
	if !a.sharing() {
		a.paced(now, sent, level, throttled, hint, others, room, k.n)
	} else {
		a.pacedShared(now, sent, level, throttled, hint, others, room, k.n)
	}
	return false
}

// pacedShared is paced on the gate's pace.
func (a *adaptive) pacedShared(now, sent time.Time, level int64, throttled bool, hint time.Duration, others, room int64, k float64) {
	a.through(func() { a.paced(now, sent, level, throttled, hint, others, room, k) }, nil)
}

// paced is answered's part that sets the pace; k is the number of the
// pacing token the send went on (answeredOn).
func (a *adaptive) paced(now, sent time.Time, level int64, throttled bool, hint time.Duration, others, room int64, k float64) {
	// A lone caller, one send at a time, makes no herd: the server's hints
	// pace it. The limiter starts on a throttle of a send that was in
	// flight beside another send of the scope: one still out as it is
	// answered, one out as it went (its level), or one that went with
	// another in flight while it was out (herdAt). A herd whose other
	// sends were all answered before the refused one (they reached the
	// server first, and the rest of the herd had not sent yet) is a herd
	// all the same, and its waiters would otherwise go all at once when
	// the hold ends; so is one whose other sends wait at the gate for
	// the scope's sends in flight (queued), or for a slot under the
	// learned cap, which lets them go one at a time, or that wait to go
	// at all (waiting), as a hold's waiters do. (A refusal with no hint
	// answered when no other send is out is not the learned cap's, which
	// answered leaves to refusals with others in flight: it starts the
	// rate's pace here.)
	if !a.enabled && (!throttled || others <= 0 && level <= 1 && a.herdAt.Load() < mono(sent) && a.queued.Load() == 0 && !a.ceil.queued() && !a.waiting()) {
		if !throttled && level > 0 && a.joined && !a.rel.epStart.IsZero() && now.Before(a.rel.epStart.Add(2*paceHintLimit)) {
			// Joined before the pace started: served in the first
			// episode, which the Transport that starts it counts on.
			a.rel.epServed++
		}
		return
	}
	long := hint >= paceHintLimit
	if throttled && a.enabled && (!sent.After(a.lastThrottle) || hint == 0 && !a.long && k <= a.cut) {
		// Of a burst already cut for: sent before the cut, or after it
		// on a token the cut found granted, or on none (a send that
		// passed the pace before it began, and waited for a slot). A
		// burst's refusals spread over time, as backoffs that end apart
		// send them, cut once, not once each.
		return
	}
	// A hint of a second or more is the release's (release.go); the
	// other throttles, and every answer while the last throttle was not
	// such, are the cubic's.
	if throttled && long {
		a.longThrottle(now, sent, hint)
		a.rel.quoted = room == 0
		if a.rel.quoted {
			a.rel.spentAt, a.rel.spentServed = sent, 0
		}
		return
	}
	if !throttled && a.long {
		a.releaseServed(now, sent, room, others)
		return
	}
	a.long = false
	var rate float64
	if throttled {
		base := a.rate()
		if a.enabled {
			base = math.Min(base, a.fillRate)
			if a.issued > a.granted {
				// Sends wait for tokens: the scope sends at the pace,
				// which the measured rate, smoothed over half seconds,
				// trails.
				base = a.fillRate
			}
		}
		if hint == 0 {
			// A refusal with no hint says the pace was too high, not that
			// the server serves less than it was just seen to: successive
			// refusals, while a burst the server still drains is refused,
			// cut from what it served in the last second, not from the
			// last cut.
			base = math.Max(base, a.servedIn(now.Add(-time.Second), now))
		}
		if hint > 0 {
			// The server said when one more send may go: pace at that,
			// as if the scope had been sending at 1/β of it, so that
			// the cubic climbs back from there.
			base = 1 / hint.Seconds() / adaptiveBeta
		}
		a.lastMax = base
		a.k = math.Cbrt(a.lastMax * (1 - adaptiveBeta) / adaptiveC)
		a.lastThrottle = now
		rate = base * adaptiveBeta
		if hint > 0 {
			a.floor = 1 / hint.Seconds()
		} else {
			a.floor = adaptiveMinRate
		}
		if !a.enabled {
			a.enabled, a.granted, a.lastFill = true, a.issued, now
			a.active.Store(true)
		}
	} else {
		t := now.Sub(a.lastThrottle).Seconds() - a.k
		rate = adaptiveC*t*t*t + a.lastMax
	}
	a.refill(now)
	a.fillRate = math.Max(rate, math.Max(a.floor, adaptiveMinRate))
	a.capacity = math.Max(rate, 1)
	if a.floor <= adaptiveMinRate {
		// Refused with no hint: the server's burst is not known, and may
		// be far less than a second of its rate, as a token bucket's is.
		// A scope whose sends all backed off at once would otherwise let
		// their retries go as one burst of the tokens stored meanwhile.
		a.capacity = math.Max(rate*blindCapacity, 1)
	}
	a.granted = math.Min(a.granted, a.issued+a.capacity)
	if throttled {
		if hint == 0 {
			// The burst refused went on the tokens granted so far: none
			// stored goes on top of it, and every send from now on waits
			// for the new rate's.
			a.granted = math.Min(a.granted, a.issued)
		}
		a.cut = a.granted
	}
}

// longThrottle starts or steers the release on a throttle, at now, of a
// send made at sent, with a hint of a second or more.
func (a *adaptive) longThrottle(now, sent time.Time, hint time.Duration) {
	// Spent or not, the limit is measured from this throttle on: the one
	// before told of an episode that is over (drained).
	a.rel.spentAt, a.rel.spentServed = time.Time{}, 0
	if !a.enabled {
		// The first episode: what the server served of the sends that
		// went within a hint before the refused one, up to its answer, is
		// the burst it takes at once. Transports that
		// joined the gate's pace before it started have added theirs.
		start := sent.Add(-hint)
		if first := a.firstSend(); start.Before(first) {
			start = first
		}
		if !a.joined || a.rel.epStart.IsZero() || a.rel.epStart.Before(start.Add(-hint)) {
			// Alone, or what was added is too old: this Transport's.
			a.rel.epServed = a.servedIn(start, now) // up to the refusal's answer: see releaseThrottled
			a.rel.late = a.servedIn(sent.Add(1), now)
		} // else: what each joined Transport added as it joined, this one's included, and since
		a.enabled, a.lastFill = true, now
		a.active.Store(true)
		a.rel.epStart, a.rel.firstEp = start, true
	}
	a.long, a.lastThrottle = true, now
	a.releaseThrottled(now, sent, hint)
}

// heldElsewhere records a hold of the scope that this Transport did not
// set, found at the gate at now and lasting hint: a process or Transport
// sharing the gate was throttled, a moment before. With a pace the gate
// shares, this Transport joins it, since the throttle is in it already.
// Otherwise, or while the gate fails to keep it, the release takes it as a
// throttle of its own, so that every
// sender of a fleet fits its share of the rate at the same overshoot. A
// hold shorter than elsewhereHintLimit, or found before this Transport
// sent anything, or by a lone caller (never more than one send in flight,
// and none waiting: herd), paces nothing, save that it joins a pace the
// gate has started.
func (a *adaptive) heldElsewhere(now time.Time, hint time.Duration, herd bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	teaches := hint >= elsewhereHintLimit && a.sends.Load() && (herd || a.herded() || a.enabled)
	if a.shared != nil {
		// Any hold found while the gate paces the scope joins its pace,
		// however little is left of it, and before this Transport has
		// sent: its sends then go at the reopen in the fleet's pace,
		// not at once on top of the burst the pace lets go.
		if a.join(now, hint, !teaches) && hint >= elsewhereHintLimit {
			// No pace in the gate yet, for a hold long enough to start
			// one: the Transport whose send was refused sets the hold
			// first and the pace a round trip later. This one's sends
			// then wait out the hold alone, and would go at its end all
			// at once, on top of the burst the pace lets go; the first
			// of them asks again (reserve).
			a.awaitFrom = now.Add(hint)
			a.awaiting.Store(true)
		}
		if a.joined && a.downUntil.IsZero() {
			return // the gate's pace has it
		}
	}
	if !teaches {
		return
	}
	a.crowded = true
	if (a.enabled && !now.After(a.lastThrottle)) || (a.enabled && !a.long) {
		return // seen already; or the cubic's: a hold found late says little of the rate
	}
	a.longThrottle(now, now, hint)
}

// elsewhereHintLimit is the shortest hold found at the gate that the
// release takes as a throttle elsewhere: what is left of a hint of a
// second once it has reached the gate and this Transport.
const elsewhereHintLimit = paceHintLimit / 2

// measure counts the send that made gone sends, at now, into the smoothed
// send rate: sends per half second in which there were any. The first
// bucket runs from the first send to the end of its half second, or of
// the next if less than a quarter second is left and the next send comes
// in it; its rate, and the rate until it ends, is the count over the time
// from the first send to the latest, taken as at least a tenth of a second
// and at most three quarters.
func (a *adaptive) measure(now time.Time, n, gone int64) {
	b := n / (int64(time.Second) / adaptiveBucket) // n is near 2^62: no product
	if a.bucket.Load() == b {
		if !a.warm.Load() {
			a.latest.Store(n)
			a.lower(n)
		}
		return
	}
	if !a.warm.Load() {
		a.lower(n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.bucket.Load()
	switch {
	case cur == 0:
		a.mark = (gone - 1) & int64(flightGone)
		a.opened = n
		a.bucket.Store(b)
		a.latest.Store(n)
	case b > cur:
		// The rate while sending: a gap with no answers, such as a wait
		// at the gate, does not count as sending slowly. This send closes
		// the bucket, and counts in it.
		count := since(a.mark, gone)
		rate := float64(max(count, 1)) * adaptiveBucket // this send at least
		if a.warm.Load() {
			rate = rate*adaptiveSmooth + a.measured*(1-adaptiveSmooth)
		} else {
			// The first bucket began with the first send, not with the
			// half second: its sends are a rate over that part of it.
			// Less than a quarter second of it goes on into this one:
			// a herd whose sends straddle the half second's end would
			// otherwise be measured by the few before it.
			half := int64(time.Second) / adaptiveBucket
			if end := (cur + 1) * half; end-a.opened < half/2 && b == cur+1 {
				a.bucket.Store(b)
				a.latest.Store(n)
				return
			}
			// Over the time from the first send measured to the latest
			// before this one, within the tenth of a second to the three
			// quarters a first bucket may span: an idle gap after it is
			// not sending slowly.
			span := time.Duration(a.latest.Load() - a.opened)
			span = min(max(span, time.Second/10), 3*time.Second/adaptiveBucket/2)
			rate = float64(max(count, 1)) / span.Seconds()
		}
		a.measured = rate
		if count > 0 {
			a.mark = gone // never back
		}
		a.warm.Store(true)
		a.bucket.Store(b)
	default:
		// Another send closed the bucket meanwhile, or this one was
		// made before it closed: it counts in the current one.
		if !a.warm.Load() {
			a.latest.Store(n)
		}
	}
}

// lower records a send at n, a mono count, as the earliest if it is: a
// herd's sends are stamped before they are measured, in whatever order
// their goroutines run, so the first measured may have gone after others.
func (a *adaptive) lower(n int64) {
	for {
		e := a.earliest.Load()
		if e != 0 && e <= n || a.earliest.CompareAndSwap(e, n) {
			return
		}
	}
}

// firstSend returns when the scope's first send went, of those measured
// before warm and calm calls counted in (backdate); zero: none.
func (a *adaptive) firstSend() time.Time {
	e := a.earliest.Load()
	if e == 0 {
		return time.Time{}
	}
	return monoEpoch.Add(time.Duration(e - monoOffset))
}

// rate is the measured send rate: before the first bucket is over, the
// count over the time from the first send measured to the latest, taken as
// at least a tenth of a second. The caller holds the lock.
func (a *adaptive) rate() float64 {
	if a.warm.Load() {
		return a.measured
	}
	if a.opened == 0 {
		return 0
	}
	// From the first send measured: a calm call's send long out before it
	// (backdate) is not sending slowly.
	d := time.Duration(a.latest.Load() - a.opened)
	return float64(since(a.mark, a.flight.gone())) / math.Max(d.Seconds(), 0.1)
}

// flight counts a scope's sends in one word: those in flight, in its top
// bits, and those gone, ever, modulo 2^flightBits, in the rest, so that
// the measured rate reads a bucket's sends from the second, and both move
// in one atomic add.
type flight struct{ w atomic.Uint64 }

// flightBits is the width of the count of sends gone; the sends in flight
// have the 24 bits above it, far more than a Transport sends at once.
const (
	flightBits = 40
	flightGone = uint64(1)<<flightBits - 1
)

// add counts a send gone; it returns the sends in flight, itself included,
// and the sends gone, modulo 2^flightBits.
func (f *flight) add() (level, gone int64) {
	w := f.w.Add(1<<flightBits + 1)
	if w&flightGone == 0 {
		// The count gone wrapped, and carried one into those in flight:
		// taken back (a moment's phantom, once in 2^40 sends).
		w = f.w.Add(^(uint64(1)<<flightBits - 1))
	}
	return int64(w >> flightBits), int64(w & flightGone)
}

// out counts a send in flight not yet gone (a calm call's, adopted), and
// returns the sends in flight, itself included.
func (f *flight) out() int64 { return int64(f.w.Add(1<<flightBits) >> flightBits) }

// went counts gone a send out already counted in flight (out).
func (f *flight) went() {
	if f.w.Add(1)&flightGone == 0 {
		f.w.Add(^(uint64(1)<<flightBits - 1)) // wrapped: as add
	}
}

// sub counts a send answered, and returns the sends still in flight.
func (f *flight) sub() int64 { return int64(f.w.Add(^(uint64(1)<<flightBits - 1)) >> flightBits) }

// load returns the sends in flight.
func (f *flight) load() int64 { return int64(f.w.Load() >> flightBits) }

// gone returns the sends gone, modulo 2^flightBits.
func (f *flight) gone() int64 { return int64(f.w.Load() & flightGone) }

// since is the sends gone from mark to gone, two readings of the count of
// sends gone; 0 when gone is not after mark, as when two sends are counted
// in one order and measured in the other.
func since(mark, gone int64) int64 {
	d := uint64(gone-mark) & flightGone
	if d > flightGone/2 {
		return 0
	}
	return int64(d)
}

// recentKeep bounds the served sends a Transport keeps for a first
// episode's burst: a burst larger is learned as this.
const recentKeep = 1024

// served records a served send of this Transport, sent at sent.
func (a *adaptive) served(sent time.Time) {
	if !a.herded() {
		return
	}
	if len(a.recent) < recentKeep {
		a.recent = append(a.recent, mono(sent))
		return
	}
	a.recent[a.recentAt] = mono(sent)
	a.recentAt = (a.recentAt + 1) % len(a.recent)
}

// servedIn counts this Transport's served sends that went in [from, to).
func (a *adaptive) servedIn(from, to time.Time) float64 {
	f, t := mono(from), mono(to)
	n := 0
	for _, s := range a.recent {
		if s >= f && s < t {
			n++
		}
	}
	return float64(n)
}
