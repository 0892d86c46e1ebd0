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
	EventAttempt   EventKind = iota + 1 // an attempt's outcome, classified: one per send
	EventRetry                          // a retry scheduled after Wait
	EventDeferred                       // a *DeferredError returned: the wait did not fit
	EventDelivered                      // handed to the caller as its class says (Deliver, Terminal)
	EventGiveUp                         // a retryable failure handed over; Stop says why
	EventBudget                         // a retry refused by the scope's retry budget
	EventGateWait                       // a wait at the gate before a send
	EventGateError                      // a gate that failed; the request is sent anyway
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
	Kind    EventKind       // which decision this is
	Context context.Context // the request's, to record on the caller's span; do not keep it
	Route   string          // the name of the policy that applied
	Method  string          // the request method
	URL     string          // the request URL, redacted: no userinfo, query or fragment
	Attempt int             // the attempt decided on, 1 for the first; for a gate wait, the one about to go
	Status  int             // the last response's status, 0 when there was none
	Class   Class           // the last attempt's verdict; Throttled for a gate wait
	Reason  string          // the verdict's reason; "cooling down" for a gate wait, "retry budget" for EventBudget
	// Wait is the wait decided on (for EventDeferred, the one that did not
	// fit); Source, where it came from: a header such as "Retry-After",
	// "backoff", or "gate", "pacing", "limit", "concurrency", "wire".
	Wait    time.Duration
	Source  string
	RetryAt time.Time     // when the next attempt may go; for a deferral, the time to persist
	Left    time.Duration // the time that remained, as DeferredError.Left
	Stop    string        // why EventGiveUp: "attempts used up", "not replay-safe", "body not replayable" or "context done"
	// Resent is, for EventAttempt, how many more times net/http's
	// Transport sent the attempt by itself, on reused connections that
	// broke before an answer; 0 with a transport that reports no
	// connections to httptrace.
	Resent int
	Err    error // the last transport error, if any
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
		Wait: d.wait, Source: d.source, RetryAt: d.retryAt, Left: d.left, Stop: d.stop, Resent: d.resent, Err: d.err,
	})
}
