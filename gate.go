// The gate: per scope, the time before which no request may be sent, and
// the in-memory Gate that also counts published quotas.

package heed

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// Gate holds, per scope, the time before which no request of that scope
// may be sent: every attempt asks it first, so one throttled response
// holds the whole scope. Implementations must be safe for concurrent use.
type Gate interface {
	// NotBefore returns the scope's "not before" time; the zero time, or a
	// past one, lets requests through.
	NotBefore(ctx context.Context, scope string) (time.Time, error)
	// Hold sets the scope's "not before" time to until, if that is later
	// than the one it has: it extends, never shortens.
	Hold(ctx context.Context, scope string, until time.Time) error
}

// QuotaGate is a Gate that also enforces the quotas responses publish:
// once a scope has r sends left until a reset, it admits at most r more,
// those in flight included, until then. A Transport calls Take before each
// send instead of NotBefore, and Done after it. NewGate and redisgate
// return QuotaGates.
type QuotaGate interface {
	Gate
	// Take admits one send of scope and returns the zero time, or returns
	// when to ask again: the hold, the reset, or soon, while sends against
	// the spent quota are unanswered.
	Take(ctx context.Context, scope string) (time.Time, error)
	// Done records the answer to a send Take admitted: the quota it
	// published (q may be nil), and whether it was served, not throttled.
	Done(ctx context.Context, scope string, q *Quota, served bool) error
}

// NewGate returns a Gate kept in memory, which is also a QuotaGate and a
// PaceGate. Pass one to several Transports with WithGate to share it.
func NewGate(opts ...GateOption) Gate {
	g := &memGate{scopes: make(map[string]*scopeState)}
	for _, o := range opts {
		if o != nil {
			o.applyGate(g)
		}
	}
	return g
}

// GateOption configures a gate made by NewGate.
type GateOption interface {
	applyGate(*memGate)
}

// pace returns the scope's pace state, nil when it has none or it was
// unchanged for rules.PaceKeep. The caller holds g.mu.
func (g *memGate) pace(scope string, now time.Time) []byte {
	if p := g.paces[scope]; p != nil && now.Sub(p.at) < rules.PaceKeep {
		return p.state
	}
	return nil
}

type gateOptionFunc func(*memGate)

func (f gateOptionFunc) applyGate(g *memGate) { f(g) }

type memGate struct {
	mu     sync.Mutex
	scopes map[string]*scopeState
	size   atomic.Int64  // len(scopes), read without the lock (keeps)
	order  sweep         // of scopes, to forget the idle (sweep.go)
	spare  []*scopeState // forgotten scopes, to be others' (at most gateKeep)
	infer  bool          // learn window capacities (WithInferredQuota)
	paces  map[string]*keptPace
	// of paces, to forget those unchanged for rules.PaceKeep
	paceOrder sweep
}

// gateKeep is how many scopes, and paces, heed's own gate keeps before it
// forgets the idle: as many as a Transport keeps quiet (scope.go), so that
// a scope a Transport keeps, its gate keeps too.
const gateKeep = quietKept

// keptPace is a scope's pace state (PaceGate), and when it last changed.
type keptPace struct {
	state []byte
	at    time.Time
}

// scopeState is what the gate knows of one scope.
type scopeState struct {
	until            time.Time // hold: nothing is sent before it
	inflight         int64     // sends admitted and not yet answered
	known            bool      // a quota is known until reset
	available        int64     // sends that may still be admitted before reset
	reset            time.Time
	lowestRemaining  int64 // the lowest remaining published in this window
	inflightAtLowest int64 // sends in flight when lowestRemaining was published, not yet answered

	// The inferred quota (WithInferredQuota).
	episode         int64         // the current episode's number
	episodeStart    time.Time     // its reopen; zero: no episode is measured
	episodeTaken    int64         // sends admitted in it
	episodeInflight int64         // of those, in flight
	episodeServed   int64         // of those, answered and served
	episodeHeldAt   time.Time     // when the hold that ends it was set: its throttle; zero: none yet
	lastServed      int64         // the last measured episode's served sends; 0: none
	lastPeriod      time.Duration // the time from its reopen to the next
	capacity        int64         // the learned window capacity S; 0: none
	period          time.Duration // the learned window P
	windows         int64         // predicted windows since S was learned
	step            int64         // how many more than S a probe admits
}

// idle reports whether the state says nothing at now and can be forgotten.
// An episode of the inferred quota is kept two periods (the last measured,
// the learned, its own up to the hold that ends it, or a second, whichever
// is longest) from its start: a throttle later than that would not agree
// with the last.
func (s *scopeState) idle(now time.Time) bool {
	return s.inflight == 0 && !s.until.After(now) && (!s.known || !s.reset.After(now)) &&
		(s.episodeStart.IsZero() || !now.Before(s.episodeStart.Add(2*max(s.lastPeriod, s.period, s.until.Sub(s.episodeStart), time.Second))))
}

func (g *memGate) NotBefore(_ context.Context, scope string) (time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.scopes[scope]
	if s == nil {
		return time.Time{}, nil
	}
	nb := s.until
	if s.known && s.available <= 0 && s.reset.After(nb) {
		nb = s.reset
	}
	return nb, nil
}

// holdEnd is the end of the scope's hold, without its spent quota's reset.
func (g *memGate) holdEnd(scope string) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.scopes[scope]; s != nil {
		return s.until
	}
	return time.Time{}
}

func (g *memGate) Hold(_ context.Context, scope string, until time.Time) error {
	now := time.Now()
	if !until.After(now) {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.state(scope, now).hold(until, now)
	return nil
}

// hold extends the state's hold to until, at now. The caller holds the
// gate's lock.
func (s *scopeState) hold(until, now time.Time) {
	if until.After(s.until) {
		if !s.episodeStart.IsZero() && !s.until.After(s.episodeStart) && until.After(s.episodeStart) {
			s.episodeHeldAt = now // the throttle that ends the episode
		}
		s.until = until
	}
}

func (g *memGate) Take(_ context.Context, scope string) (time.Time, error) {
	nb, _ := g.take(scope, time.Now())
	return nb, nil
}

// take admits one send and returns the zero time and the episode it was
// admitted in, or returns the time to ask again.
func (g *memGate) take(scope string, now time.Time) (time.Time, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state(scope, now)
	if s.until.After(now) {
		return s.until, 0
	}
	if g.infer {
		s.advance(now, g.pace(scope, now) != nil)
	}
	if s.known && !s.reset.After(now) {
		s.known = false // the quota's window is over
	}
	if s.known {
		if s.available <= 0 {
			if s.inflightAtLowest > 0 && now.Add(rules.QuotaRecheck).Before(s.reset) {
				return now.Add(rules.QuotaRecheck), 0 // an answer may give a send back
			}
			return s.reset, 0
		}
		s.available--
	} else if g.infer && s.capacity > 0 {
		limit := s.capacity
		if s.probing() {
			limit += s.step
		}
		if s.episodeTaken >= limit {
			return s.episodeStart.Add(s.period), 0
		}
	}
	s.inflight++
	s.episodeTaken++
	s.episodeInflight++
	return time.Time{}, s.episode
}

// Done records an answer. Which send it answers is not known: sends of
// episodes before the current one are taken to answer first.
func (g *memGate) Done(_ context.Context, scope string, q *Quota, served bool) error {
	g.done(scope, q, served, -1, time.Now())
	return nil
}

// done records the answer to a send admitted in the given episode; -1: not
// known.
func (g *memGate) done(scope string, q *Quota, served bool, episode int64, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state(scope, now)
	if episode < 0 && s.inflight > s.episodeInflight {
		episode = s.episode - 1 // an older send
	} else if episode < 0 {
		episode = s.episode
	}
	if episode == s.episode && s.episodeInflight > 0 {
		s.episodeInflight--
		if served {
			s.episodeServed++
		}
	}
	if s.inflight > 0 {
		s.inflight--
	}
	if q == nil || !q.Reset.After(now) {
		s.inflightAtLowest = min(s.inflightAtLowest, s.inflight)
		return
	}
	// A published figure counts every send the server had served. The
	// sends still in flight when it arrives may come after it, so they are
	// set against it; when one of them answers with a higher figure, it
	// was served before, was counted already, and gives its send back.
	if !s.known || !s.reset.After(now) || q.Remaining < s.lowestRemaining {
		if !s.known || !s.reset.After(now) || q.Reset.Before(s.reset) {
			s.reset = q.Reset
		}
		s.known, s.lowestRemaining, s.inflightAtLowest = true, q.Remaining, s.inflight
		s.available = q.Remaining - s.inflight
		return
	}
	if s.inflightAtLowest > 0 {
		s.inflightAtLowest--
		s.available++
	}
	// Resets given in whole seconds round up, so the earliest is the
	// closest.
	if q.Reset.Before(s.reset) {
		s.reset = q.Reset
	}
}

// state returns scope's state, making it, and forgets idle scopes when
// there are many, so the map stays as small as the set of busy scopes.
func (g *memGate) state(scope string, now time.Time) *scopeState {
	if s := g.scopes[scope]; s != nil {
		if !s.episodeStart.IsZero() && s.idle(now) {
			// An idle scope forgets its episodes, as redisgate's hash
			// does: a scope idle for a whole window applies no S.
			s.forget()
		}
		return s
	}
	g.order.pass(gateKeep, func(k string) bool {
		if s := g.scopes[k]; s != nil && !s.idle(now) {
			return false
		}
		if s := g.scopes[k]; s != nil && len(g.spare) < gateKeep {
			g.spare = append(g.spare, s)
		}
		delete(g.scopes, k)
		return true
	})
	var s *scopeState
	if n := len(g.spare); n > 0 {
		s = g.spare[n-1]
		g.spare[n-1] = nil
		g.spare = g.spare[:n-1]
		*s = scopeState{}
	} else {
		s = &scopeState{}
	}
	g.scopes[scope] = s
	g.order.push(scope)
	g.size.Store(int64(len(g.scopes)))
	return s
}

// Pace keeps the scope's pace state for every Transport sharing the gate
// (PaceGate).
func (g *memGate) Pace(_ context.Context, scope string, update func([]byte) []byte) error {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.paces[scope]
	old := g.pace(scope, now)
	b := update(old)
	if b == nil {
		if p != nil {
			p.state, p.at = nil, time.Time{} // over: the sweep forgets it
		}
		return nil
	}
	if old != nil && bytes.Equal(b, old) {
		return nil // unchanged
	}
	if g.paces == nil {
		g.paces = make(map[string]*keptPace)
	}
	if p == nil {
		g.paceOrder.pass(gateKeep, func(k string) bool {
			if q := g.paces[k]; q != nil && now.Sub(q.at) < rules.PaceKeep {
				return false
			}
			delete(g.paces, k)
			return true
		})
		p = &keptPace{}
		g.paces[scope] = p
		g.paceOrder.push(scope)
	}
	p.state, p.at = b, now
	return nil
}
