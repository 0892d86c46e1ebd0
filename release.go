// The paced release: how the adaptive limiter paces a scope whose herd is
// throttled with hints of a second or more, once each hold ends.

package heed

import (
	"math"
	"slices"
	"time"
)

// release is the adaptive limiter's rule for hints of a second or more. A
// whole-second hint does not say whether capacity returns whole at its end,
// as a fixed window's does, or a few milliseconds after the throttle, as a
// token bucket's that rounds its wait up to a second does. The release
// treats either as a bucket of its own: a burst, what the server served at
// once when the herd first ran into it, let go at each hold's end, and
// then a rate. Against a window, the sends past the burst are refused at
// once and the next hold ends with the window; against a bucket they are
// served, and the rate doubles every releaseStep until a send is refused.
// That overshoot fits the rate: the most the server was seen to serve
// beyond its burst, over any span of the episode, is a rate it can take.
// heed then paces just below it, and probes above it along a cubic.
//
// Every refusal under such a hint costs the scope a second that no client
// honouring it may use, so the release spends few of them: one to learn the
// burst, one to fit the rate, and one per probe. See docs/pacing.md.
type release struct {
	on      bool
	firstEp bool    // the first episode, whose served sends are the burst, until its reopen
	fitted  bool    // rate was fitted from an overshoot
	burst   float64 // sends the server serves at once
	// fitRate is the paced rate set at fitAt, from which it climbs.
	fitRate float64
	fitAt   time.Time

	reopen   time.Time // the end of the last hold this rule set
	epStart  time.Time // the current episode's first send, at or after reopen
	epServed float64   // sends of this episode, sent before epRefused, served
	// epRefused is when the episode's first refused send went, and half
	// its round trip; zero: none yet. A send served after it was refilled,
	// not part of a burst.
	epRefused time.Time
	// refusedAt is when the first episode's refused send went, and late
	// how many of that episode's served sends went after it: refilled, or
	// a new window's, they are not known to be of the burst, and the first
	// reopen lets them go at the pace past it, not at once.
	refusedAt time.Time
	late      float64
	// served holds when the episode's served sends went, the latest
	// releaseKeep of them: what a fit is made from.
	served []time.Time
	// step is when the rate last doubled, stepServed how many paced sends
	// (past the burst) were served since.
	step       time.Time
	stepServed int
	// window: the scope answers as a window does. Its sends past the burst
	// were refused even at the pace the cycle's own served sends fit, which
	// a bucket would serve. The first send past each burst then goes at
	// once, unpaced: refused, it starts the next hold sooner; served, the
	// scope was a bucket after all.
	window bool
	// quoted: the last throttle published its scope's quota spent, so the
	// room the served answers publish is the room of the limit that
	// refused, and steers the rate (headroom).
	quoted bool
	// spentAt is when the send of the last throttle that published its
	// quota spent went: the limit's room was 0 then. drainEp is what the
	// limit gave back a second since, as the room the episode's served
	// answers published and the sends they took tell it (drained), and
	// drain the last episode's that told it; 0: not known. let is how
	// many sends the episode's reopen let go at once.
	spentAt     time.Time
	spentServed float64   // served sends that went after spentAt
	epSpent     time.Time // spentAt as the episode began
	drain       float64
	drainEp     float64
	let         float64
	// refused is when the send went whose throttle ended the episode
	// still to be judged (classify); zero: none is.
	refused time.Time
	// lapsed is the last token that had come due when the episode began:
	// a send still waiting on one takes another (wait).
	lapsed float64
	// spread is when the last of the first reopen's burst comes due: its
	// tokens come due one after another from epStart, over as long as the
	// herd took to reach the server (spreadOver); zero: at once. In the
	// first episode, when its first refusal was answered.
	spread time.Time
	// asking is when the reopen let one send go alone, to ask a limit
	// that publishes its room how much it has; zero: no question out.
	// asked is what the reopen would have let go at once without it.
	asking time.Time
	asked  float64
	// given is how many tokens were given back while the question was
	// out (giveBack): made up when it is answered, so that the sends it
	// lets go are sends still waiting.
	given float64
	// took is how long the scope's last answer, served or refused with a
	// hint of a second or more, took to come: a question is asked, and
	// room taken up at once, only where answers come within releaseAsk.
	took time.Duration
}

// Release constants.
const (
	// releaseStep is how long an unfitted rate holds before it doubles,
	// provided releaseStepSends paced sends were served meanwhile.
	releaseStep      = 100 * time.Millisecond
	releaseStepSends = 2
	// releaseMinSpan is the shortest span a fit is made over: client-side
	// timing is too coarse below it.
	releaseMinSpan = 50 * time.Millisecond
	// releaseMargin is the share of a fitted rate heed paces at.
	releaseMargin = 0.9
	// releaseProbe is how long after a fit the pace is back at the fitted
	// rate's 1/releaseMargin, the rate the server took, and from when it
	// probes past it.
	releaseProbe = 8 * time.Second
	// releaseAsk is the longest a reopen's question waits for its answer
	// before the reopen lets go what it would have without one, and
	// askRecheck how often a send waiting behind the question asks
	// whether it was answered.
	releaseAsk = 100 * time.Millisecond
	askRecheck = 2 * time.Millisecond
	// releaseLate is the share of the first burst, 1/releaseLate, that the
	// first reopen lets go at the pace at most, rather than at once.
	releaseLate = 4
	// releaseKeep bounds the served sends an episode keeps for its fit.
	releaseKeep = 256
	// releaseWindowSlack is how far above the cycle's served rate a pace
	// that was refused past the burst may be and still show a window: the
	// cycle the pace was set from was a little shorter or longer.
	releaseWindowSlack = 1.1
	// headroomGain is how far the served answers' room moves the rate in
	// a second of them, as a share of it (headroom); headroomLift is the
	// least room, beyond the sends in flight, that lifts it, and
	// headroomEase the most that eases it.
	headroomGain = 0.4
	headroomLift = 3
	headroomEase = 1
	// headroomRoom is the room a bucket whose drain is known is paced to
	// keep, and headroomSpan how soon room beyond it, or short of it, is
	// taken up or made up.
	headroomRoom = 2
	headroomSpan = time.Second
	// drainMinSpan is the shortest span a drain is learned over: the
	// room a limit publishes is rounded to a send, and a refusal's room
	// of 0 may be most of one, so over a second a drain is known to a
	// send a second.
	drainMinSpan = time.Second
	// drainMinCount is the fewest sends, room and served, a drain is
	// learned from: each is known to a send, so from fewer it is known to
	// no better than a quarter.
	drainMinCount = 4
)

// begin starts an episode with the first send after the hold, at now:
// the burst is let go. Reservations made before the hold are forgotten.
func (a *adaptive) begin(now time.Time) {
	r := &a.rel
	if !r.begins(now) {
		return
	}
	a.classify()
	first := r.firstEp
	if first {
		r.firstEp = false
		// The first episode's served sends, late answers included, are
		// the burst the server serves at once. The rate past it starts at
		// twice what the cycle served, or more if the pace was set higher
		// since. The first throttle's own rate, which served only its
		// hold, counts for nothing, unless others send to the limit too
		// (crowded): then the herd it counted is the better guide.
		r.burst = math.Max(r.epServed, 1)
		cycle := math.Max(r.reopen.Sub(r.epStart).Seconds(), releaseMinSpan.Seconds())
		rate := a.fillRate
		if rate == a.provisional && !a.crowded {
			rate = 0
		}
		a.setRate(math.Max(rate, 2*r.burst/cycle))
		// The burst's late sends go at that pace: one the server served
		// for a token it refilled during the herd would, let go at once,
		// be refused within the burst, and cost the scope a hint. The
		// reopen holds no more tokens than it lets go, so that one given
		// back does not let a late send go at once either. A quarter of
		// the burst at most: a herd's sends race one another to the
		// server, so most of the burst may have gone a moment after the
		// refused send and still reached the server before it.
		r.let = math.Max(r.burst-math.Min(r.late, math.Ceil(r.burst/releaseLate)), 1)
		a.capacity = r.let
	} else {
		r.let = a.capacity
	}
	// Sends still waiting for a token from before the hold go first, as
	// part of the burst: the burst, or, where the limit published its
	// room and was not seen to be a window, what it gave back since it
	// was spent, less the sends that went since, served or still in
	// flight, and a send at least. It is then paced at no more than the
	// drain.
	if r.drainEp > 0 {
		r.drain, r.drainEp = r.drainEp, 0
	}
	if a.drains() && !r.spentAt.IsZero() {
		took := r.spentServed + float64(a.flight.load())
		r.let = math.Min(r.let, math.Max(math.Floor(r.drain*now.Sub(r.spentAt).Seconds())-took, 1))
		a.setRate(math.Min(a.fillRate, r.drain))
	}
	// The first burst's sends go over as long as the herd took to reach
	// the server (spreadOver). Not where the limit published its room
	// spent: the scope may have been held on it, before any refusal, for
	// most of the span, and the room its answers publish steers the pace.
	span := time.Duration(0)
	if first && r.let > 1 && !r.quoted {
		span = r.spreadOver(r.let, a.fillRate)
	}
	r.spread = time.Time{}
	if span > 0 {
		r.spread = now.Add(span)
	}
	r.epStart, r.epServed, r.epRefused, r.served = now, 0, time.Time{}, r.served[:0]
	r.step, r.stepServed, r.epSpent = now, 0, r.spentAt
	r.asking, r.given = time.Time{}, 0
	if r.quoted && r.let > 1 && !r.window && r.took < releaseAsk && !a.drains() && !a.sharing() {
		// The limit publishes its room, and the hint did not say how much
		// of it comes back at the hold's end: a sliding window whose end
		// the hold missed has given back only the share of it the window
		// moved on. One send asks; its answer's room is what the reopen
		// lets go (answer). Not where answers take releaseAsk or more:
		// the burst would go at its end all the same, only later.
		r.asking, r.asked, r.let, r.spread = now, r.let, 1, time.Time{}
	}
	// The tokens that had come due lapse (wait). Tokens are whole: one
	// partly come due had not, and the burst goes past the last that had,
	// so that the pace's first send past it waits a whole interval.
	r.lapsed = math.Floor(math.Min(a.granted, a.issued))
	a.granted, a.lastFill = r.lapsed+r.let, now
	if !r.spread.IsZero() {
		a.granted = r.lapsed + 1
	}
	if r.window {
		// The window's probe: the first send past the burst goes with it.
		// Against a window the sooner it is refused, the sooner the next
		// window's hold starts; a paced one would cost each window its
		// pace's spacing.
		a.granted++
	}
}

// spreadOver returns how long the first reopen takes to let go a burst of
// let: as long as the herd may have taken to reach the server, from the
// first episode's first send to its refusal's answer, and no longer than
// the pace past the burst, rate a second, would take to let them go. A
// herd's goroutines get to their sends a few milliseconds apart, and its
// first sends dial; a bucket refilled a token or two meanwhile, which it
// served as part of the burst, and which, let go at once, it would not
// have to give. The refused send reached the server after the burst and
// before its answer came.
func (r *release) spreadOver(let, rate float64) time.Duration {
	span := r.spread.Sub(r.epStart)
	if most := time.Duration((let - 1) / rate * float64(time.Second)); span > most {
		span = most
	}
	return span
}

// spreadRate is the rate, a second, at which the first reopen's burst
// comes due over its spread: one at once, the rest by its end.
func (r *release) spreadRate() float64 {
	return (r.let - 1) / r.spread.Sub(r.epStart).Seconds()
}

// answer lets go, at now, what the reopen's question was answered: the
// room the limit published as it served a send of the episode, at most
// what the reopen would have let go without asking; all of that when no
// such answer came within releaseAsk (room < 0).
func (a *adaptive) answer(now time.Time, room int64) {
	r := &a.rel
	more := r.asked - 1
	if room >= 0 {
		more = math.Min(float64(room), more)
	}
	r.let += more
	a.granted, a.lastFill = math.Min(a.granted, a.issued)+more, now
	a.unask()
}

// unask ends the reopen's question, answered or refused: the tokens given
// back meanwhile are made up, as giveBack would have.
func (a *adaptive) unask() {
	r := &a.rel
	if r.given > 0 {
		a.granted = math.Min(a.granted+r.given, a.issued+a.capacity)
	}
	r.asking, r.given = time.Time{}, 0
}

// begins reports whether a send at now starts an episode.
func (r *release) begins(now time.Time) bool {
	return r.on && !now.Before(r.reopen) && r.epStart.Before(r.reopen)
}

// releaseServed accounts for a send of the scope served at now, sent at
// sent, under the release rule; its answer published room of the scope's
// quota (-1: none), with others of its sends still in flight.
func (a *adaptive) releaseServed(now, sent time.Time, room, others int64) {
	r := &a.rel
	if r.quoted && sent.After(r.spentAt) {
		r.spentServed++
	}
	if sent.Before(r.epStart) || (!r.epRefused.IsZero() && !sent.Before(r.epRefused)) {
		return
	}
	if !r.asking.IsZero() && room >= 0 {
		// The question answered with the limit's room. A send that ended
		// unserved, or served without a room, leaves the question to
		// releaseAsk.
		a.answer(now, room)
	}
	r.epServed++
	if r.firstEp && sent.After(r.refusedAt) {
		r.late++
	}
	if !r.firstEp && r.epServed > r.burst {
		r.window = false // a send past the burst served: a bucket
	}
	if len(r.served) < releaseKeep {
		r.served = append(r.served, sent)
	} else {
		copy(r.served, r.served[1:])
		r.served[len(r.served)-1] = sent
	}
	if r.quoted && room >= 0 && !r.firstEp {
		r.drained(sent, room)
		if r.epServed > r.let && r.refused.IsZero() {
			// Past the burst: the burst's answers tell of the burst let
			// go at once, not of the pace.
			a.headroom(now, sent, room, others)
		}
		return
	}
	if !r.refused.IsZero() {
		return // a late answer of the episode the reopen judges
	}
	if r.fitted {
		t := now.Sub(r.fitAt).Seconds() / releaseProbe.Seconds()
		a.setRate(r.fitRate * (1 + (1/releaseMargin-1)*t*t*t))
		return
	}
	if r.firstEp || r.epServed <= r.burst {
		return // the first episode, or the burst: nothing paced yet
	}
	r.stepServed++
	if r.stepServed >= releaseStepSends && now.Sub(r.step) >= releaseStep {
		a.setRate(2 * a.fillRate)
		r.step, r.stepServed = now, 0
	}
}

// releaseThrottled accounts for the first throttle of a burst of them, at
// now, of a send made at sent, with hint, a second or more.
func (a *adaptive) releaseThrottled(now, sent time.Time, hint time.Duration) {
	r := &a.rel
	// Refused: the question, if one is out, is answered by the hold. The
	// refusal's time is an answer's, before any served one is timed.
	a.unask()
	r.took = now.Sub(sent)
	reopen := now.Add(hint)
	if r.on && now.Before(r.reopen) {
		// A throttle within the hold, of a send that went after the one
		// that set it (a hold found elsewhere, a send the wire check let
		// go): the hold lasts to the later end, and the episode is judged,
		// and cut, as its first refusal ended it.
		if reopen.After(r.reopen) {
			r.reopen = reopen
		}
		return
	}
	cycle := math.Max(reopen.Sub(r.epStart).Seconds(), releaseMinSpan.Seconds())
	// Sends that went up to halfway through the refused one's round trip
	// may have reached the server before it. In the first episode, up to
	// its answer: a herd's sends race one another to the server, so one
	// stamped after the refused one may have been served before it, and
	// every send of the burst counts.
	cut := sent.Add(now.Sub(sent) / 2)
	if !r.on {
		cut = now
		r.on, r.refusedAt = true, sent
		if r.firstEp {
			r.spread = now
		}
		r.burst = math.Max(r.epServed, 1)
		a.capacity, r.let = r.burst, r.burst
		a.granted, a.lastFill = a.issued, now
		// Until the reopen counts the late answers: a herd's answers race
		// the refusal back, and none of them may have won. A rate from
		// none would have the waiting line's sends defer for a wait the
		// reopen does not keep; the most the herd had in flight is taken
		// as served instead.
		served := r.epServed
		if served == 0 {
			served = math.Max(float64(a.flight.load()), float64(a.peak.Load()))
		}
		a.setRate(2 * served / cycle)
		a.provisional = a.fillRate
	} else {
		// What the episode tells is judged at the reopen (classify), once
		// the answers of the sends that went with the refused one are in.
		r.refused = sent
	}
	r.reopen, r.epRefused = reopen, cut
}

// classify judges, at the reopen, what the episode that the last throttle
// ended told of the limit: a bucket's rate, fitted from its overshoot; a
// reopen refused within its burst; or a burst served and nothing past it.
// Not at the throttle: a send that went with the refused one may have
// reached the server before it and been served, and its answer come after
// the refusal's. Judged by the answers in then, a window's reopen read as
// refused within its burst, and a bucket's fit came out low.
func (a *adaptive) classify() {
	r := &a.rel
	if r.refused.IsZero() {
		return
	}
	refused := r.refused
	r.refused = time.Time{}
	if !a.long {
		return // the cubic's since: a throttle with no hint or a short one set the rate after
	}
	// What the episode's sends were served at over the whole cycle, hold
	// included: a window's capacity over its period.
	cycle := math.Max(r.reopen.Sub(r.epStart).Seconds(), releaseMinSpan.Seconds())
	longRun := r.epServed / cycle
	if fit := r.fit(refused, releasePause(r.rampFloor(a.fillRate))); fit > 0 {
		r.fitted, r.fitAt, r.window = true, a.lastThrottle, false
		r.fitRate = math.Max(releaseMargin*fit, longRun)
		a.setRate(r.fitRate)
		// A bucket is let go half its burst at a reopen: the rest is
		// slack for sends that arrive closer together than they went.
		a.capacity = math.Max(r.burst/2, 1)
	} else if r.epServed < r.let {
		// Refused within the burst: the server took less at this reopen
		// than at the first, and is let go no more at the next.
		a.capacity = math.Max(r.epServed, 1)
	} else {
		// The burst was served, nothing past it: a window. The rate past
		// the burst matters little, but not below what the window gives.
		// Or a bucket whose rate is below the pace: halved at each such
		// reopen, but not below what the cycle served. Refused at that
		// floor, it is a window: a bucket refills at least what the cycle
		// served, so one send past its burst goes through at that pace.
		r.window = r.known() == 0 && a.fillRate <= releaseWindowSlack*longRun
		a.setRate(math.Max(a.fillRate/2, longRun))
		a.capacity = math.Min(2*a.capacity, r.burst)
	}
}

// headroom steers the rate by the room a served answer, sent at sent,
// published, when the throttle that set the pace published the same quota
// spent: the server says how many more sends it takes, which is better
// evidence than a probe. Room to spare lifts the rate, little room eases
// it, by headroomGain a second, and either way the climb along the cubic
// starts again from here, so that a server that keeps publishing room is
// paced by it rather than probed past it into a refusal and a hold of a
// second: against a sliding window, whose published room is what its
// weighted count leaves, the pace settles where a send or two of room is
// left. A limit whose drain is known (drained), and not seen to be a
// window, is paced at its drain and the room beyond headroomRoom taken up
// over headroomSpan, not below half the drain: it gives back at a steady
// rate, which the pace need not find by steps.
//
// The room is the server's as it took the send. Since then this
// Transport's sends that went after it, served or still in flight, took
// from it, and the limit gave back what it drains, the drain known, or
// else what it served in the second before the send, at most the rate:
// however slow the answers, a scope paced at its drain sees the room it
// has, and a burst let go at a reopen, served less than its sends, sees
// it spent.
// Paced by steps, easing stops at that drain, or at what was served in
// the last second if more, unless the rate is there already: a bucket
// kept full publishes no room at the very rate it drains at. Paced at a
// known drain, room short of headroomRoom eases the pace below the drain,
// to half of it at most, until the room is made up.
func (a *adaptive) headroom(now, sent time.Time, room, others int64) {
	r := &a.rel
	rate := a.fillRate
	known, bucket := r.known(), a.drains()
	drain := math.Min(rate, a.servedIn(sent.Add(-time.Second), sent))
	if bucket {
		drain = known
	}
	floor := math.Max(drain, math.Min(rate, a.servedIn(now.Add(-time.Second), now)))
	since := math.Max(a.servedIn(sent, now.Add(1))-1, 0) + float64(others) // less the send answered
	room -= int64(math.Max(math.Ceil(since-drain*now.Sub(sent).Seconds()), 0))
	step := 1 + headroomGain/math.Max(rate, 1) // one answer's share of a second's
	switch {
	case bucket:
		rate = math.Max(known+float64(room-headroomRoom)/headroomSpan.Seconds(), known/2)
	case room >= headroomLift && !a.crowded && r.took < releaseAsk:
		// Room to spare, fresh, is taken up within headroomSpan at
		// least: a rate a drain left low, which a window's return wiped
		// (drained), does not climb back by an answer's share at a time.
		// Not where others send to the limit unseen, each of which would
		// take the whole room, nor where answers are slow and the room
		// they publish stale.
		rate = math.Max(rate*step, float64(room)/headroomSpan.Seconds())
	case room >= headroomLift:
		rate *= step
	case room <= headroomEase:
		rate = math.Max(rate/step, floor)
	}
	r.fitted, r.fitAt, r.fitRate = true, now, math.Max(rate, adaptiveMinRate)
	a.setRate(r.fitRate)
}

// drains reports whether the scope is paced by a limit's drain: one is
// known, the limit published its quota spent, and it has not been seen
// to be a window; and the pace is shared with every sender the limit is
// seen to have, if any.
func (a *adaptive) drains() bool {
	r := &a.rel
	return r.quoted && r.known() > 0 && !r.window && (!a.crowded || a.sharing())
}

// known returns the limit's drain as best known: the episode's, if its
// answers told one, else the last episode's; 0 when neither did.
func (r *release) known() float64 {
	if r.drainEp > 0 {
		return r.drainEp
	}
	return r.drain
}

// drained learns the limit's drain from a served answer of the episode,
// sent at sent, that published room: since the limit was spent, at
// epSpent, it gave back that room, and a send for this one and for each
// of the episode's served sends that went before it. Sends made before
// the episode, served after the limit was spent, are not counted, nor are
// other Transports' that do not share the pace, nor sends whose answers
// are still to come, nor those that went at the same instant, which the
// server may have taken after this one: each answer's drain is, if
// anything, lower than the limit's, and the episode's is the most its
// answers show, and it is the scope's drain from the next reopen on, in
// place of the last: every span starts at the throttle that ended the
// episode before, so no figure spans an older episode's sends. A span
// shorter than drainMinSpan tells too little. A limit that publishes room
// of its whole burst filled up while it was held, and gave back nothing
// more once full, as a window does: the episode tells no drain, and the
// scope has none until one that does.
func (r *release) drained(sent time.Time, room int64) {
	if r.epSpent.IsZero() || sent.Before(r.epStart) {
		return
	}
	if float64(room)+1 >= r.burst {
		r.epSpent, r.drainEp, r.drain = time.Time{}, 0, 0
		return
	}
	span := sent.Sub(r.epSpent)
	if span < drainMinSpan {
		return
	}
	c := float64(room) + 1
	for _, s := range r.served {
		if s.After(r.epSpent) && s.Before(sent) {
			c++
		}
	}
	if c >= drainMinCount {
		r.drainEp = math.Max(r.drainEp, c/span.Seconds())
	}
}

// fit returns the highest rate, beyond the burst, at which the episode's
// sends before t were served over a span of at least releaseMinSpan: for
// a bucket holding no more than the burst, a rate it refills at. 0 when no
// span shows one. No span starts before a pause longer than pause between
// two served sends: the scope was not sending then, so the bucket filled
// up again, and the sends after it were served from its burst, not at its
// rate. A refusal soon after such a pause fits nothing.
func (r *release) fit(t time.Time, pause time.Duration) float64 {
	ts := slices.Clone(r.served)
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	n := 0
	for n < len(ts) && ts[n].Before(t) {
		n++
	}
	from := 0
	for i := 1; i < n; i++ {
		if ts[i].Sub(ts[i-1]) > pause {
			from = i
		}
	}
	best := 0.0
	for i := from; i < n; i++ {
		span := t.Sub(ts[i])
		if span < releaseMinSpan {
			break
		}
		best = math.Max(best, (float64(n-i)-r.burst)/span.Seconds())
	}
	return best
}

// rampFloor returns the least rate the episode can have been paced at,
// now at rate: while unfitted, the rate doubles at most once a releaseStep
// and once every releaseStepSends paced sends served (releaseServed), the
// last time at step, so the episode's early sends went as far apart as the
// rate it began with, not the rate it reached. A gap between them is no
// pause.
func (r *release) rampFloor(rate float64) float64 {
	if r.fitted {
		return rate // a fitted rate does not ramp
	}
	paced := -r.let // past the burst let go at once
	for _, s := range r.served {
		if !s.Before(r.epStart) && !s.After(r.step) {
			paced++
		}
	}
	n := min(int(r.step.Sub(r.epStart)/releaseStep), int(paced)/releaseStepSends)
	return rate / math.Pow(2, float64(min(max(n, 0), 30)))
}

// releasePause is the longest a scope paced at rate goes between served
// sends and still counts as sending all along, for a fit: four of its
// intervals, and releaseStep at least.
func releasePause(rate float64) time.Duration {
	return max(releaseStep, time.Duration(4/rate*float64(time.Second)))
}

// setRate sets the limiter's fill rate, at least adaptiveMinRate.
func (a *adaptive) setRate(rate float64) {
	a.fillRate = math.Max(rate, adaptiveMinRate)
}
