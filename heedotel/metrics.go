package heedotel

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/heed-go/heed"
)

// maxAttrs is the most attributes one measurement carries.
const maxAttrs = 8

// key returns the part of a setKey every measurement of e shares.
func key(name string, e *heed.Event) setKey {
	return setKey{metric: name, route: e.Route, method: e.Method, host: host(e.URL)}
}

// recordAttempt counts an attempt by its outcome. A transport error also
// sets error.type, to the classifier's reason (such as "timeout").
func (o *Observer) recordAttempt(e *heed.Event) {
	k := key(MetricAttempts, e)
	k.class, k.reason, k.status, k.err = e.Class, e.Reason, e.Status, e.Err != nil
	opt := o.attrs.options(k, func() []attribute.KeyValue {
		kv := common(make([]attribute.KeyValue, 0, maxAttrs), e)
		kv = append(kv, AttrClass.String(e.Class.String()), AttrReason.String(e.Reason))
		kv = status(kv, e.Status)
		if e.Err != nil {
			kv = append(kv, semconv.ErrorTypeKey.String(e.Reason))
		}
		return kv
	})
	o.attempts.Add(e.Context, 1, opt.add...)
}

// recordWait records the length of a wait heed is about to make.
func (o *Observer) recordWait(e *heed.Event) {
	k := key(MetricWait, e)
	k.source = e.Source
	opt := o.attrs.options(k, func() []attribute.KeyValue {
		kv := common(make([]attribute.KeyValue, 0, maxAttrs), e)
		return append(kv, AttrWaitSource.String(e.Source))
	})
	o.wait.Record(e.Context, e.Wait.Seconds(), opt.record...)
}

// recordDeferral counts a deferral, by reason and by where the wait that
// did not fit came from.
func (o *Observer) recordDeferral(e *heed.Event) {
	k := key(MetricDeferrals, e)
	k.reason, k.source, k.status = e.Reason, e.Source, e.Status
	opt := o.attrs.options(k, func() []attribute.KeyValue {
		kv := common(make([]attribute.KeyValue, 0, maxAttrs), e)
		kv = append(kv, AttrReason.String(e.Reason), AttrWaitSource.String(e.Source))
		return status(kv, e.Status)
	})
	o.deferrals.Add(e.Context, 1, opt.add...)
}

// recordGiveUp counts a retryable failure handed over without a retry.
func (o *Observer) recordGiveUp(e *heed.Event) {
	k := key(MetricGiveUps, e)
	k.stop, k.reason, k.status = stop(e), e.Reason, e.Status
	opt := o.attrs.options(k, func() []attribute.KeyValue {
		kv := common(make([]attribute.KeyValue, 0, maxAttrs), e)
		kv = append(kv, AttrStop.String(stop(e)), AttrReason.String(e.Reason))
		return status(kv, e.Status)
	})
	o.giveUps.Add(e.Context, 1, opt.add...)
}

// gateWaitingOptions returns the attributes of heed.gate.waiting for e.
func (o *Observer) gateWaitingOptions(e *heed.Event) *measureOpts {
	return o.attrs.options(key(MetricGateWaiting, e), func() []attribute.KeyValue {
		return common(make([]attribute.KeyValue, 0, maxAttrs), e)
	})
}

// stop says why a retryable failure was handed over: the Event's Stop, or
// "retry budget" for a budget refusal.
func stop(e *heed.Event) string {
	if e.Kind == heed.EventBudget {
		return e.Reason
	}
	return e.Stop
}
