package heedotel_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heed-go/heed/heedotel"
)

// reply is one scripted answer of a scripted RoundTripper.
type reply struct {
	status int
	header http.Header
	body   string
}

// scripted is an in-memory RoundTripper that answers from a script,
// repeating the last reply when the script runs out.
type scripted struct {
	mu      sync.Mutex
	replies []reply
	sent    int
}

func script(replies ...reply) *scripted { return &scripted{replies: replies} }

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	s.mu.Lock()
	rep := s.replies[min(s.sent, len(s.replies)-1)]
	s.sent++
	s.mu.Unlock()
	h := rep.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		StatusCode: rep.status, Status: http.StatusText(rep.status), Header: h,
		Body: io.NopCloser(strings.NewReader(rep.body)), ContentLength: int64(len(rep.body)), Request: r,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// requests returns the number of requests sent.
func (s *scripted) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// telemetry is an in-memory MeterProvider and TracerProvider, and an
// Observer on the first.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer trace.Tracer
	obs    *heedotel.Observer
}

func newTelemetry(t testing.TB) *telemetry {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs, err := heedotel.New(heedotel.WithMeterProvider(mp))
	require.NoError(t, err)
	return &telemetry{reader: reader, spans: spans, tracer: tp.Tracer("test"), obs: obs}
}

// points collects the metrics and returns one line per data point,
// sorted: "name{attributes} value" for sums, "name{attributes} count=N
// sum=S" for histograms.
func (tm *telemetry) points(t testing.TB) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tm.reader.Collect(t.Context(), &rm))
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, encode(dp.Attributes), dp.Value))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d sum=%g", m.Name, encode(dp.Attributes), dp.Count, dp.Sum))
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	slices.Sort(lines)
	return lines
}

// spanEvents returns the events of the ended span named name, one line
// each: "name{attributes}".
func (tm *telemetry) spanEvents(t testing.TB, name string) []string {
	t.Helper()
	s := tm.span(t, name)
	var lines []string
	for _, ev := range s.Events() {
		lines = append(lines, ev.Name+"{"+encodeKVs(ev.Attributes)+"}")
	}
	return lines
}

// span returns the ended span named name.
func (tm *telemetry) span(t testing.TB, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range tm.spans.Ended() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no ended span %q", name)
	return nil
}

func encode(s attribute.Set) string {
	return s.Encoded(attribute.DefaultEncoder())
}

// roundTripFunc is a RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func encodeKVs(kv []attribute.KeyValue) string { return encode(attribute.NewSet(kv...)) }
