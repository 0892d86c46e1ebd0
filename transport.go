// The Transport: one RoundTrip's attempts, from the gate to the response
// or error the caller gets.

package heed

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/heed-go/heed/internal/link"
	"github.com/heed-go/heed/internal/rules"
)

// Transport is an http.RoundTripper that retries through another one. Make
// one with New; it is safe for concurrent use, and meant to be shared.
type Transport struct {
	next           http.RoundTripper
	fallback       Policy  // WithPolicy's: for requests that match no route
	fallbackPolicy *policy // fallback, resolved
	routeSpecs     []routeSpec
	routes         routes
	log            *zap.Logger
	slog           *slog.Logger // nil: none
	zapped         bool         // WithLogger was given
	heard          bool         // some logger or observer may take a decision
	gate           Gate
	admit          admission // the one way through gate (admission.go)
	paces          PaceGate  // gate, given, when it keeps the pace (pace.go)
	bodyBound      int64
	maxHold        time.Duration // the longest hold or reset shared with the gate

	observe func(Event)
	times   timeSource // each request's start (timesource.go)

	named names       // limits servers named, per request scope (named.go)
	split bool        // named limits are kept apart in the gate: heed's own, or a PaceGate
	fleet *fleetNames // with a PaceGate given: the names its Transports share (fleetnames.go)
	own   *memGate    // the gate, when split and it infers nothing: scopes' sends may bypass it (bypass.go)

	scopesMu sync.RWMutex
	scopes   map[string]*scopeLocal
	order    sweep         // of scopes, to forget the quiet (scope.go)
	spare    []*scopeLocal // forgotten scopes, to be others' (at most quietKept)
	// registered counts the scopes registered, ever, and live those in
	// scopes, read without the lock; sights marks the calm calls out
	// (calm.go)
	registered atomic.Uint64
	live       atomic.Int64
	sights     sightings
}

// New returns a Transport that sends through next (http.DefaultTransport
// when nil). It panics if a WithRoute pattern is invalid or two conflict.
func New(next http.RoundTripper, opts ...Option) *Transport {
	t := &Transport{next: next, log: zap.NewNop(), bodyBound: DefaultBodyBuffer, maxHold: DefaultMaxHold}
	for _, o := range opts {
		if o != nil {
			o.apply(t)
		}
	}
	if t.next == nil {
		t.next = http.DefaultTransport
	}
	if t.gate == nil {
		t.gate = NewGate()
		t.split = true
		t.own = t.gate.(*memGate)
	} else {
		// A gate given may be shared: so is the pace, if it keeps one,
		// and the names of the limits servers name, kept apart in it.
		t.paces, _ = t.gate.(PaceGate)
		if t.paces != nil {
			t.split = true
			t.fleet = &fleetNames{gate: t.paces}
			t.named.dated = true
		}
	}
	t.admit = newAdmission(t.gate)
	t.heard = t.observe != nil || t.slog != nil || t.zapped
	t.scopes = make(map[string]*scopeLocal)
	t.sights.seed = maphash.MakeSeed()
	t.fallbackPolicy = resolve(t.fallback, "default")
	r, err := compileRoutes(t.routeSpecs)
	if err != nil {
		panic(err)
	}
	t.routes = r
	return t
}

// CloseIdleConnections closes the idle connections of the inner transport,
// when it has such a method.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// policyFor returns the policy of the most specific matching route, else
// the default one.
func (t *Transport) policyFor(req *http.Request) *policy {
	if p := t.routes.match(req); p != nil {
		return p
	}
	return t.fallbackPolicy
}

// init lets the retryable adapter resolve a request's policy (internal/link).
func init() {
	link.Policy = func(t http.RoundTripper, req *http.Request) any {
		return t.(*Transport).policyFor(req).public
	}
}

// RoundTrip sends req, retrying as its policy says. It returns the last
// response or error as it is, or a *DeferredError when a wait does not fit
// the time that remains. It never changes req, and closes req.Body exactly
// once (or leaves that to the inner transport once it has handed it over).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.policyFor(req)
	ctx := req.Context()
	// heed's own gate: a monotonic reading will do (timesource.go). A
	// shared gate, and a shared pace, keep times on the wall clock.
	var start time.Time
	var startMono int64
	if t.own != nil {
		start, startMono = t.times.now()
	} else {
		start = time.Now()
		startMono = mono(start)
	}
	// Field by field: a literal is built aside and copied, twice the work.
	var c call
	c.transport, c.policy, c.req, c.ctx = t, p, req, ctx
	c.shape.req = req
	c.deadline = rules.NewDeadline(ctx, start, p.maxElapsed)
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		// nothing to replay: c.body is that as it is
	case p.maxAttempts > 1:
		body, err := prepareBody(req, t.bodyBound)
		if err != nil {
			return nil, fmt.Errorf("heed: reading request body: %w", err)
		}
		c.body = body
	default:
		c.body = replay{orig: req.Body}
	}
	// From here the body is the RoundTrip's to close, and a Limit slot to
	// give back, on every path, a panic's included.
	defer c.end()

	c.scope = p.scope
	if p.scopeFor != nil {
		if s := p.scopeFor(req); s != "" {
			c.scope = s
		}
	}
	if c.scope == "" {
		c.scope = req.URL.Host
		if c.scope == "" {
			c.scope = req.Host
		}
	}
	c.started, c.startMono = start, startMono
	t.scope(&c, p)

	c.newKey = c.giveKey()
	return c.run(start)
}

// end closes the caller's body unless the inner transport has it, and gives
// back a Limit slot still held, as when the inner transport panicked.
func (c *call) end() {
	if c.calm != 0 {
		// Still calm: the slot is freed, or the call joins the scope that
		// counted it in before its send, if out, is answered below.
		c.join(joinEnd)
	}
	if c.local != nil {
		defer c.leaveScope()
	}
	c.body.close()
	if c.taken {
		// A panic (the inner transport's, a Classifier's, an observer's)
		// between a send's admission and its answer: the gate hears of it,
		// or counts it in flight for ever.
		c.done(nil, 0, time.Now(), false, false)
	}
	c.releaseSlot(nil)
	c.wentCeiling(false)
	if !c.outAt.IsZero() {
		// The inner transport panicked: the send is answered by nothing.
		c.release(c.outAt, c.outLevel, -1)
		c.outAt = time.Time{}
	}
}

// call is the state of one RoundTrip: its attempts, waits and what they
// hold.
type call struct {
	transport *Transport
	policy    *policy
	req       *http.Request
	ctx       context.Context
	deadline  rules.Deadline // the time this RoundTrip may spend
	started   time.Time      // when the RoundTrip began
	startMono int64          // started's mono count (timesource.go)
	retries   *retryBudget   // the scope's retry budget; nil: none
	local     *scopeLocal    // what this Transport keeps of the scope
	known     *known         // the policy's Limit in the scope; nil: none
	slotAt    time.Time      // when the current send took a Limit slot; zero: none
	// ceilingHeld: the current send holds a slot under the learned cap
	ceilingHeld bool
	spared      int // refusals for the sends in flight, not counted as attempts
	// outAt and outLevel are the time and level of the current send, gone
	// and not yet accounted for to the limiter; zero outAt: none
	outAt    time.Time
	outLevel int64
	// room is what the current send's answer published of its scope's
	// quota: the sends it takes before the reset; -1: nothing
	room  int64
	scope string
	// named is the limit the server named that the call's sends are
	// admitted in, within scope (named.go); "": scope itself
	named string
	// takenIn is the scope the current send was admitted in; holdIn, where
	// its answer's hold and quota go when not scope (named.go); namedAs,
	// takenAs and holdAs, the names of named, takenIn and holdIn
	takenIn, holdIn          string
	namedAs, takenAs, holdAs string
	// news: the answer taught the Transport a name, or a named limit's
	// hold, that the fleet's names have not (fleetnames.go)
	news     bool
	shape    lazyShape // the request's shape, for the limits servers name (named.go)
	body     replay
	newKey   string // a key heed adds to every attempt, if any
	kept     *kept  // the last attempt's outcome, while GetBody may still fail
	taken    bool   // a QuotaGate admitted the current send: tell it when done
	bypassed bool   // the current send was admitted by its scope's bypass (bypass.go)
	fast     bool   // the call holds a place in its scope's bypass, not a user's (bypass.go)
	// calm: the tag of the call's slot in the sightings while it is out on
	// the calm path; lent: local is calmScope, not registered (calm.go)
	calm    uint64
	lent    bool
	episode int64  // the episode heed's own gate admitted it in
	token   token  // the pacing token the current attempt took, if any
	urlText string // the request URL redacted, once needed

	// the last attempt
	status int
	err    error
	took   time.Duration
}

func (c *call) run(now time.Time) (*http.Response, error) {
	p := c.policy
	for attempt := 1; ; attempt++ {
		sent, err := c.passGate(attempt, now)
		if err != nil {
			return nil, err
		}
		passed := sent
		if c.known != nil {
			if sent, err = c.passLimit(attempt, sent); err != nil {
				c.done(nil, 0, sent, false, false)
				return nil, err
			}
		}
		if c.local.limiter.ceil.on.Load() {
			if sent, err = c.passCeiling(attempt, sent); err != nil {
				c.done(nil, 0, sent, false, false)
				c.releaseSlot(nil)
				return nil, err
			}
			if c.token.n == 0 && c.local.limiter.active.Load() {
				// The learned cap's send takes its pacing token once it
				// has its slot, keeping the slot meanwhile (passGate); so
				// does one that passed the gate before the pace began,
				// and waited for a slot since: it goes in the pace, as the
				// sends after it do, not on top of them.
				waited, err := c.pace(attempt, sent)
				if err != nil {
					c.done(nil, 0, sent, false, false)
					c.releaseSlot(nil)
					c.wentCeiling(false)
					return nil, err
				}
				if waited {
					sent = time.Now()
				}
			}
		}
		if sent.Sub(passed) >= holdRecheck {
			// It waited for a slot after the gate let it through: a hold
			// may have been set meanwhile, here or elsewhere.
			if sent, _, err = c.awaitHold(attempt, true, "gate"); err != nil {
				c.done(nil, 0, sent, false, false)
				c.releaseSlot(nil)
				c.wentCeiling(false)
				return nil, err
			}
		}
		out, err := c.request(attempt)
		if err != nil {
			c.done(nil, 0, sent, false, false)
			c.releaseSlot(nil)
			c.wentCeiling(false)
			return c.replayFailed(attempt, err)
		}
		c.kept = nil
		sentMono := c.startMono
		if sent != c.started {
			sentMono = mono(sent)
		}
		// A calm call's scope is calmScope, never written: its send is
		// alone, and counted in if another comes (calm.go).
		level, forming := int64(1), false
		if !c.lent {
			level, forming = c.local.limiter.sentAt(sent, sentMono)
		}
		c.outAt, c.outLevel = sent, level
		c.wentCeiling(true)
		send, check := c.wired(out, attempt, sent, forming)
		var again *resends
		if c.transport.observe != nil {
			send, again = counted(send)
		}
		resp, err := c.transport.next.RoundTrip(send)
		if send != out && resp != nil && resp.Request != nil {
			// The answer is to the request heed sent, not to the copy
			// whose context carried the checks and ends with its body;
			// a next that sent a clone of its own keeps its clone, with
			// the caller's context.
			switch {
			case resp.Request == send:
				resp.Request = out
			case resp.Request.Context() == send.Context():
				resp.Request = resp.Request.WithContext(out.Context())
			}
		}
		if check != nil {
			var de *DeferredError
			if resp, de = check.finish(resp, err); de != nil {
				// Deferred before a byte of it was written.
				c.done(nil, 0, sent, false, false)
				c.releaseSlot(nil)
				c.outAt = time.Time{}
				c.release(sent, 0, -1) // level 0: unsent, it teaches the cap nothing
				return nil, de
			}
		}
		// The limiter times a send by when it went: for a checked one,
		// once its connection was ready (wire.go).
		went := sent
		if check != nil {
			went, c.token = check.went(sent, c.token)
		}
		c.releaseSlot(resp)
		// The clock is read again only when a decision needs it: a
		// delivered response that publishes no quota does without.
		now = time.Time{}
		c.err = err
		c.status = 0
		if resp != nil {
			c.status = resp.StatusCode
		}
		var m marks
		var v Verdict
		if p.builtin {
			if resp != nil {
				m = markHeader(resp.Header)
			}
			if resp != nil && err == nil && resp.StatusCode < 400 && m&markShouldRetry == 0 {
				v = delivered // classifyMarked's answer, without the call
			} else {
				v = classifyMarked(out, resp, err, p.keyHeader, m)
			}
		} else {
			v = p.classify(out, resp, err)
			if resp != nil {
				m = markHeader(resp.Header) // as the classifier left it
			}
		}
		if c.calm != 0 && (v.Class != Deliver && v.Class != Terminal || m&(markQuota|markNamed|markRoom) != 0 || !c.calmAnswer()) {
			// An answer that leaves something to keep, or a call of the
			// scope came meanwhile (calm.go).
			c.join(joinAnswered)
		}
		c.holdIn = ""
		if c.transport.split && (m&markNamed != 0 || c.named != "") {
			c.answerScope(resp, m, v.Class == Throttled)
		} else if c.transport.fleet != nil && resp != nil && resp.StatusCode < 300 && m&markAge == 0 {
			c.transport.named.servedUnnamed(c.scope, &c.shape)
		}
		var hint time.Duration
		var source string
		hinted := false
		// A gate shared with others hears of a hold before it hears the
		// send answered, a round trip sooner: sends the fleet admits
		// meanwhile are the fewer. heed's own gate hears it after, which
		// reopens what the hold shuts.
		shared := c.transport.own == nil
		if v.Class == Throttled {
			now, hint, source, hinted = c.waitFor(resp, v, sent)
			if hinted && shared {
				c.hold(now, hint)
			}
		}
		c.done(resp, m, sent, resp != nil && v.Class != Throttled, v.Class == Deliver || v.Class == Terminal)
		if v.Class == Throttled && hinted && !shared {
			c.hold(now, hint)
		}
		c.tellFleet()

		if (v.Class == Deliver || v.Class == Terminal) && !c.transport.heard {
			c.outAt = time.Time{}
			c.release(went, level, c.room)
			return resp, err // nobody to tell: no decision to make up
		}
		d := decision{route: p.name, method: c.req.Method, url: c.req.URL, attempt: attempt, status: c.status, verdict: v, err: err}
		if c.transport.observe != nil {
			d.kind = EventAttempt
			d.urlText = c.redactedURL()
			d.resent = again.count()
			c.transport.notify(c.ctx, &d)
		}
		if v.Class == Deliver || v.Class == Terminal {
			c.outAt = time.Time{}
			c.release(went, level, c.room)
			d.kind = EventDelivered
			c.decide(levelFor(v.Class), &d)
			return resp, err
		}

		if v.Class != Throttled {
			now, hint, source, hinted = c.waitFor(resp, v, sent)
		}
		c.outAt = time.Time{}
		var capped bool
		if v.Class == Throttled && c.holdIn != "" {
			// A named limit's throttle (named.go): the scope's pace and
			// cap are not its.
			c.local.limiter.release(went, 0, -1)
		} else {
			// The pace holds the scope no longer than the gate does.
			capped = c.local.limiter.answeredOn(now, went, level, v.Class == Throttled, min(hint, c.transport.maxHold), c.room, c.token)
		}
		if capped && p.maxAttempts > 1 && c.spared < p.maxAttempts {
			// A send the server refused for the sends in flight did not
			// run: it does not use up an attempt, up to MaxAttempts of them.
			c.spared++
		}
		switch {
		case attempt-c.spared >= p.maxAttempts:
			return c.giveUp(&d, "attempts used up", resp, err)
		case v.Class == Ambiguous && !c.replaySafe():
			return c.giveUp(&d, "not replay-safe", resp, err)
		case !c.body.canReplay():
			return c.giveUp(&d, "body not replayable", resp, err)
		case c.ctx.Err() != nil:
			return c.giveUp(&d, "context done", resp, err)
		}

		base := hint
		switch {
		case capped:
			// Refused for the sends in flight: the retry waits for a slot
			// under the learned cap, not for a time.
			base, source = 0, "concurrency"
		case !hinted:
			base = p.backoff(attempt)
			source = "backoff"
		}
		wait := base
		if hinted {
			wait += rules.RandUpTo(p.jitter)
		}
		d.wait, d.source = wait, source
		d.retryAt = now.Add(wait).Round(0)
		d.left = c.deadline.Left(now)
		if !c.deadline.Fits(now, base, wait, p.maxWait, max(p.reserve, c.took)) {
			discard(resp)
			return nil, c.deferred(&d, attempt)
		}
		if !c.retries.retry(now) {
			d.kind, d.wait, d.source, d.retryAt = EventBudget, 0, "", time.Time{}
			d.verdict.Reason = reasonRetryBudget
			c.decide(zapcore.WarnLevel, &d)
			return resp, err
		}
		d.kind = EventRetry
		c.decide(zapcore.InfoLevel, &d)
		c.kept = c.keep(resp, &d)
		// Sleep until the instant decided, not a whole wait after the
		// drain: draining a slow body does not push the retry later. The
		// instant is taken up to a whole millisecond: a shared gate keeps
		// holds in whole milliseconds, rounded up, and a retry waking inside
		// that millisecond would find its own hold still closed and wait
		// again, logged, for a fraction of it.
		if err := rules.Sleep(c.ctx, time.Until(ceilMillisecond(now.Add(wait)))); err != nil {
			return nil, err
		}
		now = time.Time{} // passGate reads the clock anew
	}
}

// release accounts to the scope's limiter for the send sent at sent, at
// level, ended without a throttle (adaptive.release); a calm call's
// scope, calmScope, records nothing (calm.go).
func (c *call) release(sent time.Time, level, room int64) {
	if !c.lent {
		c.local.limiter.release(sent, level, room)
	}
}

// waitFor reads the clock once an answer to the send sent at sent is to be
// waited on, and returns the time read and the wait it asks for, from its
// hint or its verdict, at least the policy's MinWait, with its source;
// hinted is false when neither gives one.
func (c *call) waitFor(resp *http.Response, v Verdict, sent time.Time) (now time.Time, hint time.Duration, source string, hinted bool) {
	now = time.Now()
	c.local.stated(now)
	c.took = now.Sub(sent)
	if resp != nil {
		hint, source, hinted = Hint(resp, now)
	}
	if w, from, ok := v.wait(); ok && (!hinted || w > hint) {
		hint, source, hinted = w, from, true
	}
	if hinted {
		hint = max(hint, c.policy.minWait)
	}
	return now, hint, source, hinted
}

// ceilMillisecond returns t, or the next whole Unix millisecond after it.
func ceilMillisecond(t time.Time) time.Time {
	u := t.Truncate(time.Millisecond)
	if u.Before(t) {
		u = u.Add(time.Millisecond)
	}
	return u
}

// Reasons heed gives of its own.
const (
	reasonCoolingDown = "cooling down"
	reasonRetryBudget = "retry budget"
	reasonPacing      = "pacing"
	reasonConcurrency = "concurrency limit"
	reasonQueueFull   = "queue full"
)

// redactedURL returns the request URL redacted, redacting it once per
// RoundTrip.
func (c *call) redactedURL() string {
	if c.urlText == "" {
		c.urlText = rules.RedactURL(c.req.URL)
	}
	return c.urlText
}

// decide logs d at level and tells the observer.
func (c *call) decide(level zapcore.Level, d *decision) {
	if !c.transport.heard {
		return
	}
	if c.transport.observe != nil {
		d.urlText = c.redactedURL()
	}
	c.transport.logDecision(c.ctx, level, d)
	c.transport.notify(c.ctx, d)
}

func (c *call) giveUp(d *decision, why string, resp *http.Response, err error) (*http.Response, error) {
	d.kind = EventGiveUp
	d.stop = why
	c.decide(zapcore.WarnLevel, d)
	return resp, err
}

// levelFor is the log level of a delivered response or error of class c.
func levelFor(c Class) zapcore.Level {
	if c == Terminal {
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
