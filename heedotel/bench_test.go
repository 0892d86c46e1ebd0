package heedotel_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// okOnce returns a RoundTripper that answers with one response over and
// over: it allocates nothing, so whatever is counted is heed's and the
// Observer's.
func okOnce() http.RoundTripper {
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: http.NoBody}
	return roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
}

// TestNoObserverNoAllocation: without an observer, heed's success path
// allocates nothing, so heedotel costs nothing to programs that do not use
// it. The root package asserts the same (TestNoObserverNoAllocation in
// observe_test.go); this keeps the promise in view where the cost of an
// observer is measured.
func TestNoObserverNoAllocation(t *testing.T) {
	tr := heed.New(okOnce())
	req, err := http.NewRequest("GET", "https://api.example/v1/models", nil)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(200, func() { _, _ = tr.RoundTrip(req) })
	assert.Zero(t, allocs)
}

// TestObserveAttemptNoAllocation: once an attempt's attributes have been
// seen, counting it allocates nothing in the Observer.
func TestObserveAttemptNoAllocation(t *testing.T) {
	tm := newTelemetry(t)
	e := heed.Event{
		Kind: heed.EventAttempt, Context: t.Context(), Route: "default", Method: "GET",
		URL: "https://api.example/v1/models", Attempt: 1, Status: 200, Class: heed.Deliver, Reason: "ok",
	}
	allocs := testing.AllocsPerRun(200, func() { tm.obs.Observe(e) })
	assert.Zero(t, allocs)
}

// BenchmarkSuccess measures one successful RoundTrip (two events: an
// attempt and a delivery) without an observer; with an empty one, which is
// heed's own cost of building the Events; with an Observer and no span in
// the context; and with an Observer and a recording span.
func BenchmarkSuccess(b *testing.B) {
	tm := newTelemetry(b)
	ctx, span := tm.tracer.Start(b.Context(), "caller")
	defer span.End()
	for _, bc := range []struct {
		name string
		tr   *heed.Transport
		req  *http.Request
	}{
		{"no observer", heed.New(okOnce()), newBenchRequest(b, b.Context())},
		{"empty observer", heed.New(okOnce(), heed.WithObserver(func(heed.Event) {})), newBenchRequest(b, b.Context())},
		{"observer", heed.New(okOnce(), heed.WithObserver(tm.obs.Observe)), newBenchRequest(b, b.Context())},
		{"observer and span", heed.New(okOnce(), heed.WithObserver(tm.obs.Observe)), newBenchRequest(b, ctx)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = bc.tr.RoundTrip(bc.req)
			}
		})
	}
}

// BenchmarkObserve measures the Observer alone, per kind of event, with a
// recording span in the context.
func BenchmarkObserve(b *testing.B) {
	tm := newTelemetry(b)
	ctx, span := tm.tracer.Start(b.Context(), "caller")
	defer span.End()
	base := heed.Event{
		Context: ctx, Route: "default", Method: "GET", URL: "https://api.example/v1/models",
		Attempt: 1, Status: 429, Class: heed.Throttled, Reason: "rate limited",
		Wait: 2 * time.Second, Source: "Retry-After", RetryAt: time.Now().Add(2 * time.Second),
	}
	for _, kind := range []heed.EventKind{heed.EventAttempt, heed.EventRetry, heed.EventDeferred, heed.EventDelivered} {
		e := base
		e.Kind = kind
		b.Run(kind.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tm.obs.Observe(e)
			}
		})
	}
}

func newBenchRequest(b *testing.B, ctx context.Context) *http.Request {
	req, err := http.NewRequestWithContext(ctx, "GET", "https://api.example/v1/models", nil)
	require.NoError(b, err)
	return req
}
