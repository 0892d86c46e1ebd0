package main

import (
	"context"
	"errors"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// telemetry is an OpenTelemetry SDK that keeps what it records in memory,
// so that the program can print it: a real program would export it
// instead (OTLP, Prometheus).
type telemetry struct {
	meters *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
	traces *sdktrace.TracerProvider
	spans  *tracetest.SpanRecorder
}

func newTelemetry() *telemetry {
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	return &telemetry{
		meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		reader: reader,
		traces: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		spans:  spans,
	}
}

// metrics collects the metrics recorded so far.
func (t *telemetry) metrics(ctx context.Context) ([]metricdata.Metrics, error) {
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	var all []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		all = append(all, sm.Metrics...)
	}
	return all, nil
}

// ended returns the spans ended so far.
func (t *telemetry) ended() []sdktrace.ReadOnlySpan { return t.spans.Ended() }

func (t *telemetry) shutdown(ctx context.Context) error {
	return errors.Join(t.traces.Shutdown(ctx), t.meters.Shutdown(ctx))
}
