// Observing: each decision of a Transport as an Event, for metrics and
// traces.

package heed

import (
	"context"
	"time"
)

// EventKind says which decision an Event reports.
type EventKind uint8

const (
	// EventAttempt reports one attempt's outcome: its status or error,
	// classified. Every send produces one.
	EventAttempt EventKind = iota + 1
	// EventRetry reports a retry scheduled after Wait.
	EventRetry
	// EventDeferred reports a *DeferredError returned: the wait did not fit.
	EventDeferred
	// EventDelivered reports a response or error handed to the caller
	// because its class says so (Deliver or Terminal).
	EventDelivered
	// EventGiveUp reports a retryable failure handed to the caller as it
	// is: attempts used up, not replay-safe, body not replayable, or the
	// context done. Stop says which.
	EventGiveUp
	// EventBudget reports a retry refused by the scope's retry budget; the
	// last response or error is handed to the caller.
	EventBudget
	// EventGateWait reports a wait at the gate before sending: the scope is
	// cooling down or out of its published quota.
	EventGateWait
	// EventGateError reports a gate that failed; the request is sent anyway.
	EventGateError
)

// String returns the kind's name in lower case, which is also the "op"
// of the decision's log line.
func (k EventKind) String() string {
	switch k {
	case EventAttempt:
		return "attempt"
	case EventRetry:
		return "retry"
	case EventDeferred:
		return "deferred"
	case EventDelivered:
		return "delivered"
	case EventGiveUp:
		return "give up"
	case EventBudget:
		return "budget"
	case EventGateWait:
		return "gate wait"
	case EventGateError:
		return "gate error"
	}
	return "unknown"
}

// Event is one decision of a Transport, as given to an observer.
type Event struct {
	// Kind says which decision this is.
	Kind EventKind
	// Context is the request's context, for observers that record on the
	// caller's span. Observers must not keep it.
	Context context.Context
	// Route is the name of the policy that applied.
	Route string
	// Method is the request method.
	Method string
	// URL is the request URL, redacted: no userinfo, no query, no fragment.
	URL string
	// Attempt is the attempt the decision follows: 1 for the first; for a
	// gate wait, the attempt about to be sent.
	Attempt int
	// Status is the last response's status, 0 when there was none.
	Status int
	// Class and Reason are the last attempt's verdict; for a gate wait,
	// Throttled and "cooling down"; for a budget refusal, Reason is
	// "retry budget".
	Class  Class
	Reason string
	// Wait is the wait decided on (retry, gate wait) or that did not fit
	// (deferred).
	Wait time.Duration
	// Source is where Wait came from: the header that hinted it (such as
	// "Retry-After" or "retry-after-ms"), "backoff", or "gate".
	Source string
	// RetryAt is when the next attempt may go: after a retry or gate wait,
	// or for a deferral, the time to persist.
	RetryAt time.Time
	// Left is the time that remained, 0 when none did or there was no limit.
	Left time.Duration
	// Stop says why a retryable failure was handed over (EventGiveUp):
	// "attempts used up", "not replay-safe", "body not replayable" or
	// "context done".
	Stop string
	// Err is the last transport error, if any.
	Err error
}

// WithObserver calls observe synchronously for every decision the Transport
// makes, in order, on the goroutine of the RoundTrip. An observer sees
// decisions but cannot change them, and must be safe for concurrent use
// and quick. Default: none; without one, no Event is built.
func WithObserver(observe func(Event)) Option {
	return optionFunc(func(t *Transport) { t.observe = observe })
}

// notify gives d to the observer, if there is one.
func (t *Transport) notify(ctx context.Context, d *decision) {
	if t.observe == nil {
		return
	}
	t.observe(Event{
		Kind: d.kind, Context: ctx, Route: d.route, Method: d.method, URL: d.redacted(),
		Attempt: d.attempt, Status: d.status, Class: d.verdict.Class, Reason: d.verdict.Reason,
		Wait: d.wait, Source: d.source, RetryAt: d.retryAt, Left: d.left, Stop: d.stop, Err: d.err,
	})
}
