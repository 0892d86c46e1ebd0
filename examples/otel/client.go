package main

import (
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedotel"
)

// newClient returns an *http.Client with heed OUTSIDE otelhttp's
// transport: heed decides and waits, and every attempt it sends goes
// through otelhttp, which makes it a client span of its own under the
// caller's span. The other way round, otelhttp outside heed, makes one span
// for the whole RoundTrip, retries and waits hidden inside it.
func newClient(base http.RoundTripper, tel *telemetry, obs *heedotel.Observer) *http.Client {
	inner := otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(tel.traces),
		otelhttp.WithMeterProvider(tel.meters),
	)
	return &http.Client{Transport: heed.New(inner,
		heed.WithObserver(obs.Observe),
		// Each route is its own gate scope, so that the images route's long
		// cool-down does not hold the others back.
		heed.WithRoute("GET /v1/models", heed.Policy{Name: "models", Scope: "models", MinWait: 50 * time.Millisecond}),
		heed.WithRoute("POST /v1/images/generations", heed.Policy{Name: "images", Scope: "images"}),
		heed.WithRoute("POST /v1/chat/completions", heed.Policy{Name: "chat", Scope: "chat"}),
	)}
}
