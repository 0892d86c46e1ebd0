// The Stripe SDK client, with heed as its HTTP transport.

package main

import (
	"net/http"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/stripe/stripe-go/v82"
	"go.uber.org/zap"
)

// policy is how heed treats Stripe calls. Stripe sends no wait with a 429
// (docs.stripe.com/rate-limits asks for exponential backoff), so the
// backoff starts at a fifth of a second; 3 attempts in all.
var policy = heed.Policy{
	Name:        "stripe",
	MaxAttempts: 3,
	Backoff:     heed.EqualJitter(200*time.Millisecond, 5*time.Second),
}

// client is a Stripe SDK client whose HTTP traffic goes through heed.
type client struct {
	*stripe.Client
	hc *http.Client
}

// newClient returns an SDK client for baseURL (empty: Stripe's own) whose
// backend sends through heed with policy p. sdkRetries is the backend's
// MaxNetworkRetries: 0 leaves heed the only retry layer; the tests pass
// stripe.DefaultMaxNetworkRetries (2) to show what goes wrong otherwise.
// The SDK puts an Idempotency-Key on every POST itself, which makes the
// POST replay-safe for heed.
func newClient(baseURL, key string, p heed.Policy, log *zap.Logger, sdkRetries int64) *client {
	hc := sdkdemo.HTTPClient(heed.WithPolicy(p), heed.WithLogger(log))
	cfg := &stripe.BackendConfig{
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(sdkRetries),
		EnableTelemetry:   stripe.Bool(false),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if baseURL != "" {
		cfg.URL = stripe.String(baseURL)
	}
	return &client{
		Client: stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg))),
		hc:     hc,
	}
}

// Close closes the client's idle connections.
func (c *client) Close() { c.hc.CloseIdleConnections() }
