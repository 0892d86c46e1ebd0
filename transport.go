// The Transport: one RoundTrip's attempts, from the gate to the response
// or error the caller gets.

package heed

import (
	"context"
	"fmt"
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
	gate           Gate
	admit          admission // the one way through gate (admission.go)
	paces          PaceGate  // gate, given, when it keeps the pace (pace.go)
	bodyBound      int64
	maxHold        time.Duration // the longest hold or reset shared with the gate

	observe func(Event)

	scopesMu sync.Mutex
	scopes   map[string]*scopeLocal
}

// scopeLocal is what a Transport keeps of one scope in process: its
// adaptive rate limiter and the retry budget of each policy used in it.
type scopeLocal struct {
	limiter adaptive
	budgets map[*policy]*retryBudget
	known   map[*policy]*known // the Limit of each policy that has one
	waiting atomic.Int64       // RoundTrips waiting to send

	// The latest hold this Transport set, and when it was set, in Unix
	// nanoseconds: what the wire check checks against.
	heldUntil   atomic.Int64
	throttledAt atomic.Int64
	// published: a response of the scope published a quota, whose reset
	// the gate may answer as a wait
	published atomic.Bool
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
	} else {
		// A gate given may be shared: so is the pace, if it keeps one.
		t.paces, _ = t.gate.(PaceGate)
	}
	t.admit = newAdmission(t.gate)
	t.scopes = make(map[string]*scopeLocal)
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

// scope returns the in-process state of scope, p's retry budget in it
// (nil when p has none) and p's known limit in it (nil when p has none).
func (t *Transport) scope(p *policy, scope string) (*scopeLocal, *retryBudget, *known) {
	t.scopesMu.Lock()
	defer t.scopesMu.Unlock()
	sl := t.scopes[scope]
	if sl == nil {
		sl = &scopeLocal{budgets: make(map[*policy]*retryBudget, 1)}
		if t.paces != nil {
			sl.limiter.shared = &sharedPace{gate: t.paces, scope: scope}
		}
		t.scopes[scope] = sl
	}
	var k *known
	if p.limit != (Limit{}) {
		if k = sl.known[p]; k == nil {
			if sl.known == nil {
				sl.known = make(map[*policy]*known, 1)
			}
			k = newKnown(p.limit)
			sl.known[p] = k
		}
	}
	if p.budget.Disabled {
		return sl, nil, k
	}
	b := sl.budgets[p]
	if b == nil {
		b = newRetryBudget(p.budget)
		sl.budgets[p] = b
	}
	return sl, b, k
}

// RoundTrip sends req, retrying as its policy says. It returns the last
// response or error as it is, or a *DeferredError when a wait does not fit
// the time that remains. It never changes req, and closes req.Body exactly
// once (or leaves that to the inner transport once it has handed it over).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.policyFor(req)
	ctx := req.Context()
	start := time.Now()
	rt := roundTrip{t: t, p: p, req: req, ctx: ctx, deadline: rules.NewDeadline(ctx, start, p.maxElapsed)}
	if p.maxAttempts > 1 {
		body, err := prepareBody(req, t.bodyBound)
		if err != nil {
			return nil, fmt.Errorf("heed: reading request body: %w", err)
		}
		rt.body = body
	} else {
		rt.body = replay{orig: req.Body}
		if req.Body == http.NoBody {
			rt.body.orig = nil
		}
	}
	// From here the body is the RoundTrip's to close, and a Limit slot to
	// give back, on every path, a panic's included.
	defer rt.end()

	rt.scope = p.scope
	if p.scopeFor != nil {
		if s := p.scopeFor(req); s != "" {
			rt.scope = s
		}
	}
	if rt.scope == "" {
		rt.scope = req.URL.Host
		if rt.scope == "" {
			rt.scope = req.Host
		}
	}
	rt.local, rt.retries, rt.known = t.scope(p, rt.scope)
	rt.retries.first(start)

	if p.keyHeader != "" && (req.Method == http.MethodPost || req.Method == http.MethodPatch) && req.Header.Get(p.keyHeader) == "" {
		rt.newKey = newIdempotencyKey()
	}
	return rt.run(start)
}

// end closes the caller's body unless the inner transport has it, and gives
// back a Limit slot still held, as when the inner transport panicked.
func (rt *roundTrip) end() {
	rt.body.close()
	rt.releaseSlot(nil)
	rt.wentCeiling(false)
	if !rt.outAt.IsZero() {
		// The inner transport panicked: the send is answered by nothing.
		rt.local.limiter.release(time.Now(), rt.outAt, rt.outLevel)
		rt.outAt = time.Time{}
	}
}

// roundTrip is the state of one RoundTrip call.
type roundTrip struct {
	t        *Transport
	p        *policy
	req      *http.Request
	ctx      context.Context
	deadline rules.Deadline // the time this RoundTrip may spend
	retries  *retryBudget   // the scope's retry budget; nil: none
	local    *scopeLocal    // what this Transport keeps of the scope
	known    *known         // the policy's Limit in the scope; nil: none
	slotAt   time.Time      // when the current send took a Limit slot; zero: none
	// ceilingHeld: the current send holds a slot under the learned cap
	ceilingHeld bool
	spared      int // refusals for the sends in flight, not counted as attempts
	// outAt and outLevel are the time and level of the current send, gone
	// and not yet accounted for to the limiter; zero outAt: none
	outAt    time.Time
	outLevel int64
	scope    string
	body     replay
	newKey   string // a key heed adds to every attempt, if any
	kept     *kept  // the last attempt's outcome, while GetBody may still fail
	taken    bool   // a QuotaGate admitted the current send: tell it when done
	episode  int64  // the episode heed's own gate admitted it in
	urlText  string // the request URL redacted, once needed

	// the last attempt
	status int
	err    error
	took   time.Duration
}

func (rt *roundTrip) run(now time.Time) (*http.Response, error) {
	p := rt.p
	for attempt := 1; ; attempt++ {
		sent, err := rt.passGate(attempt, now)
		if err != nil {
			return nil, err
		}
		if rt.known != nil {
			if sent, err = rt.passLimit(attempt, sent); err != nil {
				rt.done(nil, sent, false)
				return nil, err
			}
		}
		if rt.local.limiter.ceil.on.Load() {
			if sent, err = rt.passCeiling(attempt, sent); err != nil {
				rt.done(nil, sent, false)
				rt.releaseSlot(nil)
				return nil, err
			}
		}
		out, err := rt.request(attempt)
		if err != nil {
			rt.done(nil, sent, false)
			rt.releaseSlot(nil)
			rt.wentCeiling(false)
			return rt.replayFailed(attempt, err)
		}
		rt.kept = nil
		level := rt.local.limiter.sent(sent)
		rt.outAt, rt.outLevel = sent, level
		rt.wentCeiling(true)
		send, check := rt.wired(out, attempt, sent)
		resp, err := rt.t.next.RoundTrip(send)
		if check != nil {
			var de *DeferredError
			if resp, de = check.finish(resp, err); de != nil {
				// Deferred before a byte of it was written.
				rt.done(nil, sent, false)
				rt.releaseSlot(nil)
				rt.outAt = time.Time{}
				rt.local.limiter.release(time.Now(), sent, 0) // level 0: unsent, it teaches the cap nothing
				return nil, de
			}
		}
		rt.releaseSlot(resp)
		// The clock is read again only when a decision needs it: a
		// delivered response that publishes no quota does without.
		now = time.Time{}
		rt.err = err
		rt.status = 0
		if resp != nil {
			rt.status = resp.StatusCode
		}
		v := p.classify(out, resp, err)
		rt.done(resp, sent, resp != nil && v.Class != Throttled)

		d := decision{route: p.name, method: rt.req.Method, url: rt.req.URL, attempt: attempt, status: rt.status, verdict: v, err: err}
		if rt.t.observe != nil {
			d.kind = EventAttempt
			d.urlText = rt.redactedURL()
			rt.t.notify(rt.ctx, &d)
		}
		if v.Class == Deliver || v.Class == Terminal {
			rt.outAt = time.Time{}
			rt.local.limiter.release(time.Now(), sent, level)
			d.kind = EventDelivered
			rt.decide(levelFor(v.Class), &d)
			return resp, err
		}

		now = time.Now()
		rt.took = now.Sub(sent)
		var hint time.Duration
		var source string
		hinted := false
		if resp != nil {
			hint, source, hinted = Hint(resp, now)
		}
		if hinted {
			hint = max(hint, p.minWait)
		}
		if v.Class == Throttled && hinted {
			rt.hold(now, hint)
		}
		rt.outAt = time.Time{}
		capped := rt.local.limiter.answered(now, sent, level, v.Class == Throttled, hint)
		if capped && p.maxAttempts > 1 && rt.spared < p.maxAttempts {
			// A send the server refused for the sends in flight did not
			// run: it does not use up an attempt, up to MaxAttempts of them.
			rt.spared++
		}
		switch {
		case attempt-rt.spared >= p.maxAttempts:
			return rt.giveUp(&d, "attempts used up", resp, err)
		case v.Class == Ambiguous && !rt.replaySafe():
			return rt.giveUp(&d, "not replay-safe", resp, err)
		case !rt.body.canReplay():
			return rt.giveUp(&d, "body not replayable", resp, err)
		case rt.ctx.Err() != nil:
			return rt.giveUp(&d, "context done", resp, err)
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
		d.left = rt.deadline.Left(now)
		if !rt.deadline.Fits(now, base, wait, p.maxWait, max(p.reserve, rt.took)) {
			discard(resp)
			return nil, rt.deferred(&d, attempt)
		}
		if !rt.retries.retry(now) {
			d.kind, d.wait, d.source, d.retryAt = EventBudget, 0, "", time.Time{}
			d.verdict.Reason = reasonRetryBudget
			rt.decide(zapcore.WarnLevel, &d)
			return resp, err
		}
		d.kind = EventRetry
		rt.decide(zapcore.InfoLevel, &d)
		rt.kept = rt.keep(resp, &d)
		// Sleep until the instant decided, not a whole wait after the
		// drain: draining a slow body does not push the retry later. The
		// instant is taken up to a whole millisecond: a shared gate keeps
		// holds in whole milliseconds, rounded up, and a retry waking inside
		// that millisecond would find its own hold still closed and wait
		// again, logged, for a fraction of it.
		if err := rules.Sleep(rt.ctx, time.Until(ceilMillisecond(now.Add(wait)))); err != nil {
			return nil, err
		}
		now = time.Time{} // passGate reads the clock anew
	}
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
func (rt *roundTrip) redactedURL() string {
	if rt.urlText == "" {
		rt.urlText = rules.RedactURL(rt.req.URL)
	}
	return rt.urlText
}

// decide logs d at level and tells the observer.
func (rt *roundTrip) decide(level zapcore.Level, d *decision) {
	if rt.t.observe != nil {
		d.urlText = rt.redactedURL()
	}
	rt.t.logDecision(level, d)
	rt.t.notify(rt.ctx, d)
}

func (rt *roundTrip) giveUp(d *decision, why string, resp *http.Response, err error) (*http.Response, error) {
	d.kind = EventGiveUp
	d.stop = why
	rt.decide(zapcore.WarnLevel, d)
	return resp, err
}

func (rt *roundTrip) deferred(d *decision, attempts int) *DeferredError {
	d.kind = EventDeferred
	rt.decide(zapcore.WarnLevel, d)
	return &DeferredError{
		Method:   rt.req.Method,
		URL:      rt.redactedURL(),
		Route:    rt.p.name,
		Key:      rt.key(),
		Attempts: attempts,
		Status:   rt.status,
		Reason:   d.verdict.Reason,
		Wait:     d.wait,
		RetryAt:  d.retryAt,
		Left:     d.left,
		Err:      rt.err,
		rawURL:   rt.req.URL,
	}
}

func levelFor(c Class) zapcore.Level {
	if c == Terminal {
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
