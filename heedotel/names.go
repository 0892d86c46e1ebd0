package heedotel

import "go.opentelemetry.io/otel/attribute"

// Instrument names, as they appear to a metrics backend.
const (
	// MetricAttempts counts every attempt sent (an Int64Counter, unit
	// "{attempt}").
	MetricAttempts = "heed.attempts"
	// MetricWait records every in-process wait, a scheduled retry or a
	// gate wait, in seconds (a Float64Histogram, unit "s").
	MetricWait = "heed.wait"
	// MetricDeferrals counts every *heed.DeferredError returned (an
	// Int64Counter, unit "{deferral}").
	MetricDeferrals = "heed.deferrals"
	// MetricGateWaiting is the number of requests waiting at the gate
	// right now (an Int64UpDownCounter, unit "{request}").
	MetricGateWaiting = "heed.gate.waiting"
	// MetricGiveUps counts retryable failures handed to the caller without
	// a retry: attempts used up, not replay-safe, body not replayable,
	// context done, or refused by the retry budget (an Int64Counter, unit
	// "{request}").
	MetricGiveUps = "heed.giveups"
)

// Span event names, added to the span in the request's context.
const (
	// SpanEventWait marks a wait: a retry scheduled, or a wait at the gate.
	SpanEventWait = "heed.wait"
	// SpanEventDeferred marks a *heed.DeferredError returned.
	SpanEventDeferred = "heed.deferred"
	// SpanEventTerminal marks a failure that no wait fixes (class
	// Terminal, such as a quota or billing 429) delivered to the caller.
	SpanEventTerminal = "heed.terminal"
	// SpanEventGiveUp marks a retryable failure handed to the caller
	// without a retry.
	SpanEventGiveUp = "heed.give_up"
)

// heed's own attribute keys. Where the OpenTelemetry semantic conventions
// name an attribute (http.request.method, http.response.status_code,
// server.address, error.type), that name is used instead.
const (
	// AttrRoute is the name of the policy that applied.
	AttrRoute = attribute.Key("heed.route")
	// AttrClass is the attempt's class: "deliver", "terminal",
	// "throttled", "transient" or "ambiguous".
	AttrClass = attribute.Key("heed.class")
	// AttrReason is the classifier's short, stable reason, such as
	// "rate limited" or "billing"; "cooling down" for the gate.
	AttrReason = attribute.Key("heed.reason")
	// AttrWaitSource is where a wait came from: the header that hinted it
	// (such as "Retry-After" or "retry-after-ms"), "backoff", or "gate".
	AttrWaitSource = attribute.Key("heed.wait.source")
	// AttrWaitSeconds is a wait in seconds (span events).
	AttrWaitSeconds = attribute.Key("heed.wait.seconds")
	// AttrRetryAt is when the next attempt may go, RFC 3339 in UTC (span
	// events); for a deferral, the time to persist.
	AttrRetryAt = attribute.Key("heed.retry_at")
	// AttrAttempt is the attempt a decision follows, 1 for the first (span
	// events).
	AttrAttempt = attribute.Key("heed.attempt")
	// AttrLeftSeconds is the time that remained when a deferral was
	// decided, in seconds (span events).
	AttrLeftSeconds = attribute.Key("heed.left.seconds")
	// AttrStop says why a retryable failure was handed over unretried:
	// heed.Event's Stop, or "retry budget".
	AttrStop = attribute.Key("heed.stop")
	// AttrDeferred is set to true on a span whose request was deferred.
	AttrDeferred = attribute.Key("heed.deferred")
)
