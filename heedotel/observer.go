package heedotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/heed-go/heed"
)

// ScopeName is the instrumentation scope of the Observer's meter.
const ScopeName = "github.com/heed-go/heed/heedotel"

// Observer records heed's decisions as OpenTelemetry metrics and as events
// on the caller's span. Make one with New and pass its Observe method to
// heed.WithObserver; one Observer may serve many Transports. It is safe for
// concurrent use.
type Observer struct {
	attempts    metric.Int64Counter
	wait        metric.Float64Histogram
	deferrals   metric.Int64Counter
	gateWaiting metric.Int64UpDownCounter
	giveUps     metric.Int64Counter

	attrs attrCache
}

// waitBuckets are the bounds of heed.wait's buckets, in seconds: from a
// gate's few milliseconds to the longest hints servers send.
var waitBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600}

// New returns an Observer whose instruments come from the MeterProvider of
// the options (default: the global one). It fails only when the provider
// refuses to make an instrument.
func New(opts ...Option) (*Observer, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	m := c.meterProvider.Meter(ScopeName)
	o := &Observer{}
	var err error
	if o.attempts, err = m.Int64Counter(MetricAttempts,
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts sent by heed, by route and outcome.")); err != nil {
		return nil, fmt.Errorf("heedotel: %s: %w", MetricAttempts, err)
	}
	if o.wait, err = m.Float64Histogram(MetricWait,
		metric.WithUnit("s"),
		metric.WithDescription("Waits heed made in process before a retry or at the gate, by source."),
		metric.WithExplicitBucketBoundaries(waitBuckets...)); err != nil {
		return nil, fmt.Errorf("heedotel: %s: %w", MetricWait, err)
	}
	if o.deferrals, err = m.Int64Counter(MetricDeferrals,
		metric.WithUnit("{deferral}"),
		metric.WithDescription("Requests heed deferred: the wait did not fit the remaining time.")); err != nil {
		return nil, fmt.Errorf("heedotel: %s: %w", MetricDeferrals, err)
	}
	if o.gateWaiting, err = m.Int64UpDownCounter(MetricGateWaiting,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests waiting at heed's gate for their scope to cool down.")); err != nil {
		return nil, fmt.Errorf("heedotel: %s: %w", MetricGateWaiting, err)
	}
	if o.giveUps, err = m.Int64Counter(MetricGiveUps,
		metric.WithUnit("{request}"),
		metric.WithDescription("Retryable failures heed handed over without a retry, by why.")); err != nil {
		return nil, fmt.Errorf("heedotel: %s: %w", MetricGiveUps, err)
	}
	return o, nil
}

// Observe records one decision. Pass it to heed.WithObserver.
func (o *Observer) Observe(e heed.Event) {
	if e.Context == nil {
		e.Context = context.Background()
	}
	switch e.Kind {
	case heed.EventAttempt:
		o.recordAttempt(&e)
	case heed.EventRetry:
		o.recordWait(&e)
		markWait(&e)
	case heed.EventGateWait:
		o.recordWait(&e)
		o.gateWait(&e)
		markWait(&e)
	case heed.EventDeferred:
		o.recordDeferral(&e)
		markDeferred(&e)
	case heed.EventDelivered:
		if e.Class == heed.Terminal {
			markTerminal(&e)
		}
	case heed.EventGiveUp, heed.EventBudget:
		o.recordGiveUp(&e)
		markGiveUp(&e)
	}
}
