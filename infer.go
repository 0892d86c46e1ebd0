// The inferred quota: a window's capacity and period learned from the
// throttles of a server that publishes no quota.

package heed

import (
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// WithInferredQuota turns on or off the inferred quota: a scope seen to
// serve S sends per period P in its last two episodes, while it has no
// shared pace, is admitted S per P from each reopen, probing S+1 now and
// then; it only ever sends later than the server asked
// (docs/inferred-quota.md). Default: off.
func WithInferredQuota(on bool) GateOption {
	return gateOptionFunc(func(g *memGate) { g.infer = on })
}

// newEpisode starts an episode at start, the zero time for none.
func (s *scopeState) newEpisode(start time.Time) {
	s.episode++
	s.episodeStart, s.episodeTaken, s.episodeInflight, s.episodeServed, s.episodeHeldAt = start, 0, 0, 0, time.Time{}
	if s.capacity > 0 {
		s.windows++
	}
}

// forget forgets the episodes of an idle scope (see idle): all but the
// episode's number, which goes on counting.
func (s *scopeState) forget() {
	s.episodeStart, s.episodeTaken, s.episodeInflight, s.episodeServed, s.episodeHeldAt = time.Time{}, 0, 0, 0, time.Time{}
	s.lastServed, s.lastPeriod, s.capacity, s.period, s.windows, s.step = 0, 0, 0, 0, 0, 0
}

// probing reports whether the current window is a probe, which admits S
// and step more sends.
func (s *scopeState) probing() bool {
	return s.windows%rules.InferProbe == 0
}

// advance ends the current episode when a hold has ended since it began
// (a throttle ended it), or, with a learned capacity, when its predicted
// window is over; and starts one at now when there is none. until <= now.
// While the scope has a shared pace (paced), nothing is learned: a herd
// paces it, and the pace's release tells a window from a token bucket that
// rounds its wait up to a second, which two episodes cannot.
func (s *scopeState) advance(now time.Time, paced bool) {
	switch {
	case s.until.After(s.episodeStart):
		served, period := s.episodeServed, s.until.Sub(s.episodeStart)
		// The episode measures the server's window only when the server's
		// hold explains most of its period: the throttle came no later
		// than halfway through it. A later one shows the client's own
		// rhythm, or a short hint (the limiter's) that happened to end a
		// long episode; such an episode is not a measurement.
		measured := s.episodeHeldAt.Sub(s.episodeStart) <= period/2
		start := s.until
		switch {
		case s.episodeStart.IsZero():
			s.lastServed, s.lastPeriod = 0, 0
			if s.idle(now) {
				// Nothing happened since the hold ended: redisgate
				// forgot it, and the first episode runs from the first
				// send, as a scope's first does.
				start = now
			}
		case s.capacity > 0 && served >= s.capacity:
			// Throttled after S served: a probe refused, or a send from
			// elsewhere. The window served what it served; the hold's end
			// is the next reopen.
			s.capacity, s.step = served, 1
		case s.capacity > 0:
			s.capacity = 0 // the window moved or shrank: learn again
			s.lastServed, s.lastPeriod = measurement(measured, served, period)
		default:
			if measured && !paced && agree(s.lastServed, s.lastPeriod, served, period) {
				s.capacity, s.period, s.windows, s.step = served, max(period, s.lastPeriod), 0, 1
			}
			s.lastServed, s.lastPeriod = measurement(measured, served, period)
		}
		s.newEpisode(start)
	case s.capacity > 0 && !now.Before(s.episodeStart.Add(s.period)):
		end := s.episodeStart.Add(s.period)
		if s.episodeTaken < s.capacity || !now.Before(end.Add(s.period)) {
			// Not saturated: forget.
			s.capacity, s.lastServed, s.lastPeriod = 0, 0, 0
			s.newEpisode(now)
			return
		}
		if s.probing() && s.episodeServed > s.capacity {
			// The probe was served: probe again, twice as far.
			s.capacity, s.step, s.windows = s.episodeServed, 2*s.step, rules.InferProbe-1
		}
		s.newEpisode(end)
	case s.episodeStart.IsZero():
		// A scope's first episode runs from its first send.
		s.episodeStart = now
	}
}

// measurement returns what an episode that served sends over period
// teaches the next: itself when measured, nothing (0, 0) when not.
func measurement(measured bool, served int64, period time.Duration) (int64, time.Duration) {
	if !measured {
		return 0, 0
	}
	return served, period
}

// agree reports whether two consecutive episodes, each served sends over
// a period, show one window: the same sends, periods of a second or more
// within 5 % of each other.
func agree(s1 int64, p1 time.Duration, s2 int64, p2 time.Duration) bool {
	lo, hi := min(p1, p2), max(p1, p2)
	// hi-lo <= lo/20 is 20*(hi-lo) <= lo for whole durations, without
	// overflowing when a hold lasted years.
	return s1 > 0 && s1 == s2 && lo >= time.Second && hi-lo <= lo/20
}
