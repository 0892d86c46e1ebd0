package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestOneClientSpanPerAttempt: with heed outside otelhttp, each attempt is
// a client span of its own under the caller's span, and heed's waits and
// deferral are events on the caller's span.
func TestOneClientSpanPerAttempt(t *testing.T) {
	srv := newFakeServer()
	defer srv.Close()
	tel := newTelemetry()
	defer func() { require.NoError(t, tel.shutdown(t.Context())) }()
	require.NoError(t, demo(t.Context(), io.Discard, tel, srv.URL))

	spans := tel.ended()
	tests := []struct {
		caller   string
		statuses []int64  // of the client spans, in order
		events   []string // on the caller's span
		deferred bool
	}{
		{"models: 429 waited out", []int64{429, 200}, []string{"heed.wait"}, false},
		{"models: published quota spent, wait at the gate", []int64{200}, []string{"heed.wait"}, false},
		{"images: deferred", []int64{429}, []string{"heed.deferred"}, true},
		{"chat: terminal quota", []int64{429}, []string{"heed.terminal"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.caller, func(t *testing.T) {
			caller := find(t, spans, tt.caller)
			assert.False(t, caller.Parent().IsValid(), "the caller's span is a root")
			var statuses []int64
			for _, s := range spans {
				if s.Parent().SpanID() != caller.SpanContext().SpanID() {
					continue
				}
				assert.Equal(t, trace.SpanKindClient, s.SpanKind(), s.Name())
				assert.Equal(t, caller.SpanContext().TraceID(), s.SpanContext().TraceID())
				statuses = append(statuses, value(s.Attributes(), "http.response.status_code").AsInt64())
			}
			assert.Equal(t, tt.statuses, statuses, "one client span per attempt")
			var events []string
			for _, e := range caller.Events() {
				events = append(events, e.Name)
			}
			assert.Equal(t, tt.events, events)
			assert.Equal(t, tt.deferred, value(caller.Attributes(), "heed.deferred").AsBool())
		})
	}
}

// TestMetricNames: heed's instruments and otelhttp's are all collected.
func TestMetricNames(t *testing.T) {
	srv := newFakeServer()
	defer srv.Close()
	tel := newTelemetry()
	defer func() { require.NoError(t, tel.shutdown(t.Context())) }()
	require.NoError(t, demo(t.Context(), io.Discard, tel, srv.URL))

	metrics, err := tel.metrics(t.Context())
	require.NoError(t, err)
	var names []string
	for _, m := range metrics {
		names = append(names, m.Name)
	}
	for _, want := range []string{"heed.attempts", "heed.wait", "heed.deferrals", "heed.gate.waiting", "http.client.request.duration"} {
		assert.Contains(t, names, want)
	}
	assert.NotContains(t, names, "heed.giveups", "no scenario gives up")
}

// TestRun: the program as a user runs it.
func TestRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), nil, &stdout, &stderr), stderr.String())
	out := stdout.String()
	for _, want := range []string{
		"# scenarios", "images: deferred", "deferred: retry at ",
		"# metrics", "heed.attempts (counter, {attempt})", "heed.wait (histogram, s)",
		"heed.deferrals (counter, {deferral})", "heed.gate.waiting (up-down counter, {request})",
		"# spans", "event heed.deferred",
	} {
		assert.Contains(t, out, want)
	}
	assert.Empty(t, stderr.String())
}

func find(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return nil
}

func value(kv []attribute.KeyValue, key attribute.Key) attribute.Value {
	for _, a := range kv {
		if a.Key == key {
			return a.Value
		}
	}
	return attribute.Value{}
}
