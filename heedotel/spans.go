package heedotel

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/heed-go/heed"
)

// The span events go on the span in the request's context: the caller's.
// None of them sets the span's status. A deferral is the outcome heed
// exists to produce when a wait does not fit, and the caller persists
// RetryAt and moves on; an Error status would make every planned deferral
// look like a failure on dashboards and in tail-based sampling, which is
// what this package is meant to keep apart. The span also belongs to the
// caller, who sees the error RoundTrip returns and can set the status.

// markWait adds a heed.wait event for a scheduled retry or a gate wait.
func markWait(e *heed.Event) {
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	kv := make([]attribute.KeyValue, 0, 6)
	kv = append(kv,
		AttrWaitSeconds.Float64(e.Wait.Seconds()),
		AttrWaitSource.String(e.Source),
		AttrRetryAt.String(retryAt(e.RetryAt)),
		AttrAttempt.Int(e.Attempt),
		AttrReason.String(e.Reason),
	)
	kv = status(kv, e.Status)
	span.AddEvent(SpanEventWait, trace.WithAttributes(kv...))
}

// markDeferred adds a heed.deferred event and sets heed.deferred=true.
func markDeferred(e *heed.Event) {
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	kv := make([]attribute.KeyValue, 0, 7)
	kv = append(kv,
		AttrRetryAt.String(retryAt(e.RetryAt)),
		AttrWaitSeconds.Float64(e.Wait.Seconds()),
		AttrWaitSource.String(e.Source),
		AttrLeftSeconds.Float64(e.Left.Seconds()),
		AttrAttempt.Int(e.Attempt),
		AttrReason.String(e.Reason),
	)
	kv = status(kv, e.Status)
	span.AddEvent(SpanEventDeferred, trace.WithAttributes(kv...))
	span.SetAttributes(AttrDeferred.Bool(true))
}

// markTerminal adds a heed.terminal event: a failure no wait fixes was
// delivered.
func markTerminal(e *heed.Event) {
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	kv := make([]attribute.KeyValue, 0, 3)
	kv = append(kv, AttrAttempt.Int(e.Attempt), AttrReason.String(e.Reason))
	kv = status(kv, e.Status)
	span.AddEvent(SpanEventTerminal, trace.WithAttributes(kv...))
}

// markGiveUp adds a heed.give_up event: a retryable failure was handed
// over without a retry.
func markGiveUp(e *heed.Event) {
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	kv := make([]attribute.KeyValue, 0, 4)
	kv = append(kv, AttrStop.String(stop(e)), AttrAttempt.Int(e.Attempt), AttrReason.String(e.Reason))
	kv = status(kv, e.Status)
	span.AddEvent(SpanEventGiveUp, trace.WithAttributes(kv...))
}

// retryAt formats t as RFC 3339 in UTC, "" when zero.
func retryAt(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
