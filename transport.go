// The Transport: one RoundTrip's attempts, from the gate to the response
// or error the caller gets.

package heed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

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
	quotas         QuotaGate // gate, when it enforces published quotas
	mem            *memGate  // gate, when it is heed's own: called with the time
	local          bool      // mem counts quotas beside a plain gate, which holds
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
	}
	t.quotas, _ = t.gate.(QuotaGate)
	t.mem, _ = t.gate.(*memGate)
	if t.quotas == nil {
		// A plain Gate shares cooldowns; published quotas are then
		// counted in process.
		t.mem = NewGate().(*memGate)
		t.local = true
	}
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

// Policy returns the policy that applies to req, with every default filled
// in. Scope stays empty when it defaults to the request's host. It serves
// adapters that make heed's decisions inside another client.
func (t *Transport) Policy(req *http.Request) Policy {
	return t.policyFor(req).public
}

// scope returns the in-process state of scope, p's retry budget in it
// (nil when p has none) and p's known limit in it (nil when p has none).
func (t *Transport) scope(p *policy, scope string) (*scopeLocal, *retryBudget, *known) {
	t.scopesMu.Lock()
	defer t.scopesMu.Unlock()
	sl := t.scopes[scope]
	if sl == nil {
		sl = &scopeLocal{budgets: make(map[*policy]*retryBudget, 1)}
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
// the remaining budget. It never changes req, and closes req.Body exactly
// once (or leaves that to the inner transport once it has handed it over).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.policyFor(req)
	ctx := req.Context()
	start := time.Now()
	b := rules.NewBudget(ctx, start, p.maxElapsed)
	scope := p.scope
	if p.scopeFor != nil {
		if s := scopeFor(p.scopeFor, req); s != "" {
			scope = s
		}
	}
	if scope == "" {
		scope = req.URL.Host
		if scope == "" {
			scope = req.Host
		}
	}

	local, retries, known := t.scope(p, scope)
	rt := roundTrip{t: t, p: p, req: req, ctx: ctx, deadline: b, scope: scope, retries: retries, local: local, limiter: &local.limiter, known: known}
	rt.retries.first(start)
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
	defer rt.body.close()

	if p.keyHeader != "" && (req.Method == http.MethodPost || req.Method == http.MethodPatch) && req.Header.Get(p.keyHeader) == "" {
		rt.newKey = newIdempotencyKey()
	}
	return rt.run(start)
}

// send hands req to the inner transport. Should that panic (or an observer
// called from the wire check), the send's Limit slot is given back first,
// so that no place is lost for good.
func (rt *roundTrip) send(req *http.Request) (*http.Response, error) {
	if rt.slotAt.IsZero() {
		return rt.t.next.RoundTrip(req)
	}
	defer func() {
		if v := recover(); v != nil {
			rt.releaseSlot(nil)
			panic(v)
		}
	}()
	return rt.t.next.RoundTrip(req)
}

// scopeFor calls f for req; should f panic, it closes req's body first, as
// a RoundTrip closes it on every path, and panics on.
func scopeFor(f func(*http.Request) string, req *http.Request) string {
	defer func() {
		if v := recover(); v != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			panic(v)
		}
	}()
	return f(req)
}

// roundTrip is the state of one RoundTrip call.
type roundTrip struct {
	t        *Transport
	p        *policy
	req      *http.Request
	ctx      context.Context
	deadline rules.Budget // the time this RoundTrip may spend
	retries  *retryBudget // the scope's retry budget; nil: none
	local    *scopeLocal  // what this Transport keeps of the scope
	limiter  *adaptive    // the scope's adaptive rate limiter
	known    *known       // the policy's Limit in the scope; nil: none
	slotAt   time.Time    // when the current send took a Limit slot; zero: none
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

// key returns the idempotency key the request carries, if any.
func (rt *roundTrip) key() string {
	if rt.newKey != "" {
		return rt.newKey
	}
	return rules.RequestKey(rt.req.Header, rt.p.keyHeader)
}

// replaySafe reports whether an Ambiguous failure may be resent: the method
// is idempotent, the request carries an idempotency key, or the policy says
// so.
func (rt *roundTrip) replaySafe() bool {
	return rt.p.retryUnsafe || rules.Idempotent(rt.req.Method) || rt.key() != ""
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
		out, err := rt.request(attempt)
		if err != nil {
			rt.done(nil, sent, false)
			rt.releaseSlot(nil)
			return rt.replayFailed(attempt, err)
		}
		rt.kept = nil
		rt.limiter.sent(sent)
		send, check := rt.wired(out, attempt, sent)
		resp, err := rt.send(send)
		if check != nil {
			var de *DeferredError
			if resp, de = check.finish(resp, err); de != nil {
				// Deferred before a byte of it was written.
				rt.done(nil, sent, false)
				rt.releaseSlot(nil)
				rt.limiter.release(time.Now(), sent)
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
			d.op = opAttempt
			d.urlText = rt.redactedURL()
			rt.t.notify(rt.ctx, &d)
		}
		if v.Class == Deliver || v.Class == Terminal {
			rt.limiter.release(time.Now(), sent)
			d.op = opDeliver
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
		rt.limiter.answered(now, sent, v.Class == Throttled, hint)
		switch {
		case attempt >= p.maxAttempts:
			return rt.giveUp(&d, "attempts used up", resp, err)
		case v.Class == Ambiguous && !rt.replaySafe():
			return rt.giveUp(&d, "not replay-safe", resp, err)
		case !rt.body.canReplay():
			return rt.giveUp(&d, "body not replayable", resp, err)
		case rt.ctx.Err() != nil:
			return rt.giveUp(&d, "context done", resp, err)
		}

		base := hint
		if !hinted {
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
			d.op, d.wait, d.source, d.retryAt = opBudget, 0, "", time.Time{}
			d.verdict.Reason = reasonRetryBudget
			rt.decide(zapcore.WarnLevel, &d)
			return resp, err
		}
		d.op = opRetry
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

// passGate waits while the scope is cooling down, or returns a
// *DeferredError when that wait does not fit. With a QuotaGate it also
// takes one of the scope's published sends. A gate error fails open. It
// returns the time it let the attempt through; now is the time it was
// called, if the caller has it.
func (rt *roundTrip) passGate(attempt int, now time.Time) (time.Time, error) {
	p := rt.p
	for {
		if now.IsZero() {
			now = time.Now()
		}
		if pace := rt.limiter.wait(now); pace > 0 {
			if err := rt.waitToSend(attempt, now, pace, pace, reasonPacing, "pacing", zapcore.DebugLevel); err != nil {
				return now, err
			}
			now = time.Time{}
			continue
		}
		var nb time.Time
		var err error
		switch {
		case rt.t.local:
			nb, err = rt.t.gate.NotBefore(rt.ctx, rt.scope)
			now = time.Now()
			if err == nil && !nb.After(now) {
				nb, rt.episode = rt.t.mem.take(rt.scope, now)
			}
		case rt.t.mem != nil:
			nb, rt.episode = rt.t.mem.take(rt.scope, now)
		default:
			nb, err = rt.t.quotas.Take(rt.ctx, rt.scope)
			now = time.Now()
		}
		if err != nil {
			rt.taken = false
			rt.decide(zapcore.WarnLevel, &decision{op: opGateError, route: p.name, method: rt.req.Method, url: rt.req.URL, attempt: attempt, err: err})
			return now, nil
		}
		if nb.IsZero() {
			rt.taken = true
			return now, nil
		}
		// Not admitted: wait for the gate to open, then spread out, so
		// that the scope's waiters do not all fire at the same instant.
		base := max(nb.Sub(now), time.Millisecond)
		level := zapcore.InfoLevel
		if base <= QuotaRecheck {
			// Perhaps a recheck while answers that may give sends back are
			// pending (QuotaRecheck). Whether to defer is decided against
			// the reset all the same, which NotBefore answers: a caller
			// whose time cannot cover it defers at once, as the contract
			// says, rather than spend its time on sends that may not come
			// back. One whose time can asks again at each recheck, logged
			// at debug level. The cost is a NotBefore call per short
			// refusal; a failing gate answers no reset.
			var quotas Gate = rt.t.quotas
			if rt.t.mem != nil {
				quotas = rt.t.mem
			}
			if reset, _ := quotas.NotBefore(rt.ctx, rt.scope); reset.Sub(now) > base {
				full := reset.Sub(now)
				if rt.deadline.Fits(now, full, full, p.maxWait, max(p.reserve, rt.took)) {
					level = zapcore.DebugLevel
				} else {
					base = full // defers below
				}
			}
		}
		spread := p.jitter
		if spread == 0 {
			spread = min(base/50, maxGateSpread)
		}
		wait := base + rules.RandUpTo(spread)
		if err := rt.waitToSend(attempt, now, base, wait, reasonCoolingDown, "gate", level); err != nil {
			return now, err
		}
		now = time.Time{}
	}
}

// waitToSend sleeps wait (base before any spread) before attempt is sent,
// logged at level, or returns a *DeferredError, with nothing more sent, when
// that wait does not fit; or the context's error if it ends first.
func (rt *roundTrip) waitToSend(attempt int, now time.Time, base, wait time.Duration, reason, source string, level zapcore.Level) error {
	p := rt.p
	d := rt.waitDecision(attempt, now, wait, reason, source)
	if !rt.deadline.Fits(now, base, wait, p.maxWait, max(p.reserve, rt.took)) {
		return rt.deferred(&d, attempt-1)
	}
	// The scope's waiting line is bounded: one more defers at once.
	if n := rt.local.waiting.Add(1); n > int64(p.maxWaiting) {
		rt.local.waiting.Add(-1)
		d.verdict.Reason = reasonQueueFull
		return rt.deferred(&d, attempt-1)
	}
	defer rt.local.waiting.Add(-1)
	d.op = opGateWait
	rt.decide(level, &d)
	return rules.Sleep(rt.ctx, wait)
}

// waitDecision describes a wait of attempt before it is sent, decided at
// now.
func (rt *roundTrip) waitDecision(attempt int, now time.Time, wait time.Duration, reason, source string) decision {
	return decision{
		route: rt.p.name, method: rt.req.Method, url: rt.req.URL, attempt: attempt,
		status: rt.status, verdict: Verdict{Throttled, reason},
		wait: wait, source: source, retryAt: now.Add(wait).Round(0), left: rt.deadline.Left(now),
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

// maxGateSpread bounds the default spread of a scope's waiters after its
// gate opens: 1/50 of the wait, at most this.
const maxGateSpread = 20 * time.Millisecond

// done tells a QuotaGate that the send it admitted was answered, with the
// quota the response published, and whether it was served (answered, not
// throttled). A response served by a cache (one with an Age header)
// publishes nothing, as the RateLimit fields draft says.
//
// now is the time the send went, which serves when the response publishes
// nothing; the clock is read when it does.
func (rt *roundTrip) done(resp *http.Response, now time.Time, served bool) {
	if !rt.taken {
		return
	}
	rt.taken = false
	var q *Quota
	if resp != nil && resp.Header["Age"] == nil && publishesQuota(resp.Header) {
		now = time.Now()
		if r, reset, _, ok := quota(resp.Header, now); ok {
			q = &Quota{Remaining: r, Reset: now.Add(min(reset, rt.t.maxHold))}
		}
	}
	if rt.t.mem != nil {
		rt.t.mem.done(rt.scope, q, served, rt.episode, now)
		return
	}
	if err := rt.t.quotas.Done(rt.ctx, rt.scope, q, served); err != nil {
		rt.decide(zapcore.WarnLevel, &decision{op: opGateError, route: rt.p.name, method: rt.req.Method, url: rt.req.URL, err: err})
	}
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

// hold extends the scope's gate to hint after now, at most the Transport's
// MaxHold; a gate error is logged and ignored.
func (rt *roundTrip) hold(now time.Time, hint time.Duration) {
	until := now.Add(min(hint, rt.t.maxHold))
	for held := rt.local.heldUntil.Load(); until.UnixNano() > held; held = rt.local.heldUntil.Load() {
		if rt.local.heldUntil.CompareAndSwap(held, until.UnixNano()) {
			break
		}
	}
	rt.local.throttledAt.Store(now.UnixNano())
	if err := rt.t.gate.Hold(rt.ctx, rt.scope, until); err != nil {
		rt.decide(zapcore.WarnLevel, &decision{op: opGateError, route: rt.p.name, method: rt.req.Method, url: rt.req.URL, err: err})
	}
}

// request returns what attempt sends: the caller's request itself when
// nothing about it changes, else a clone with a fresh body.
func (rt *roundTrip) request(attempt int) (*http.Request, error) {
	if attempt == 1 && rt.newKey == "" && !rt.body.swaps(attempt) {
		if rt.body.orig != nil {
			rt.body.sendsOriginal()
		}
		return rt.req, nil
	}
	out := rt.req.Clone(rt.ctx)
	if rt.newKey != "" {
		out.Header.Set(rt.p.keyHeader, rt.newKey)
	}
	if err := rt.body.set(out, attempt); err != nil {
		return nil, fmt.Errorf("heed: replaying request body: %w", err)
	}
	return out, nil
}

// kept is an attempt's outcome, kept through the wait before a retry whose
// body the caller's GetBody makes: when GetBody then fails, the caller gets
// this outcome, as it was, rather than heed's error.
type kept struct {
	resp *http.Response // its body read into memory; nil with a transport error
	err  error
	d    decision // the retry decision made of it
}

// keep discards resp as every retry does, first keeping the outcome when
// the next attempt's body comes from GetBody, which may fail: the
// transport error, or the response with its body read whole, when the body
// ends within the draining bounds. A longer body is discarded, not kept.
func (rt *roundTrip) keep(resp *http.Response, d *decision) *kept {
	if rt.body.kind != bodyGetBody {
		discard(resp)
		return nil
	}
	k := &kept{err: rt.err, d: *d}
	if resp == nil {
		return k
	}
	body, whole := drain(resp, true)
	if !whole {
		return nil
	}
	r := *resp
	r.Body = http.NoBody
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	k.resp = &r
	return k
}

// replayFailed ends a RoundTrip whose next attempt's body could not be
// made (err): with the last attempt's response or error as it was, when it
// was kept, else with err.
func (rt *roundTrip) replayFailed(attempt int, err error) (*http.Response, error) {
	k := rt.kept
	rt.kept = nil
	if k == nil {
		return nil, err
	}
	d := k.d
	d.wait, d.source, d.retryAt = 0, "", time.Time{}
	return rt.giveUp(&d, "body not replayable", k.resp, k.err)
}

func (rt *roundTrip) giveUp(d *decision, why string, resp *http.Response, err error) (*http.Response, error) {
	d.op = opGiveUp
	d.stop = why
	rt.decide(zapcore.WarnLevel, d)
	return resp, err
}

func (rt *roundTrip) deferred(d *decision, attempts int) *DeferredError {
	d.op = opDefer
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

// newIdempotencyKey returns a random UUID (version 4).
func newIdempotencyKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}

// Draining bounds: a discarded response is read this far, for this long, so
// that its connection can be reused, and then closed.
const (
	drainBytes = 64 << 10
	drainTime  = 250 * time.Millisecond
)

// discard drains and closes a response that will not be delivered, bounded
// in bytes and time so that an endless body cannot stall a retry.
func discard(resp *http.Response) { drain(resp, false) }

// drain reads resp's body, at most drainBytes for at most drainTime, and
// closes it. With keep, it returns what it read, and whether that is the
// whole body: it ended short of drainBytes, or at its Content-Length.
func drain(resp *http.Response, keep bool) ([]byte, bool) {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return nil, true
	}
	body := resp.Body
	type drained struct {
		b     []byte
		whole bool
	}
	done := make(chan drained, 1)
	go func() {
		if !keep {
			_, _ = io.CopyN(io.Discard, body, drainBytes)
			done <- drained{}
			return
		}
		b, err := io.ReadAll(io.LimitReader(body, drainBytes))
		done <- drained{b, err == nil && (len(b) < drainBytes || resp.ContentLength == int64(len(b)))}
	}()
	timer := time.NewTimer(drainTime)
	var got drained
	select {
	case got = <-done:
	case <-timer.C:
	}
	timer.Stop()
	body.Close()
	return got.b, got.whole
}
