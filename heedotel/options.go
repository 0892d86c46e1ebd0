package heedotel

import "go.opentelemetry.io/otel/metric"

// Option configures an Observer made by New.
type Option interface {
	apply(*config)
}

type config struct {
	meterProvider metric.MeterProvider
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the Observer's instruments come
// from. Default (or nil): the global one, otel.GetMeterProvider(), which
// forwards to a provider set later with otel.SetMeterProvider.
//
// There is no WithTracerProvider: the Observer starts no span, it adds
// events to the span found in each request's context, whichever provider
// made it.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}
