// The Anthropic SDK client, with heed as its HTTP transport.

package main

import (
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"go.uber.org/zap"
)

// policy is how heed treats Anthropic calls: a 429's retry-after is waited
// (whole seconds, so heed's 1s floor under a hint is kept), and a 529
// overloaded_error, which carries no hint, backs off from half a second.
// Everything else is heed's default: 5 attempts, a wait longer than 60s
// defers.
var policy = heed.Policy{
	Name:    "anthropic",
	Backoff: heed.EqualJitter(500*time.Millisecond, 30*time.Second),
}

// client is an Anthropic SDK client whose HTTP traffic goes through heed.
type client struct {
	anthropic.Client
	hc *http.Client
}

// newClient returns an SDK client for baseURL with its own retries off
// (option.WithMaxRetries(0)): heed, the *http.Client's transport, is the
// only retry layer.
func newClient(baseURL, apiKey string, log *zap.Logger) *client {
	return newClientWith(baseURL, apiKey, log)
}

// newClientWith is newClient with the options in extra applied last; the
// demo and the tests pass option.WithMaxRetries(2), the SDK's default, to
// show what goes wrong when its retries are left on.
func newClientWith(baseURL, apiKey string, log *zap.Logger, extra ...option.RequestOption) *client {
	hc := sdkdemo.HTTPClient(heed.WithPolicy(policy), heed.WithLogger(log))
	opts := append([]option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithAPIKey(apiKey),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}, extra...)
	return &client{Client: anthropic.NewClient(opts...), hc: hc}
}

// Close closes the client's idle connections.
func (c *client) Close() { c.hc.CloseIdleConnections() }
