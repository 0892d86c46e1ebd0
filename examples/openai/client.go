// The OpenAI SDK client, with heed as its HTTP transport.

package main

import (
	"net/http"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/zap"
)

// policy is how heed treats OpenAI calls. OpenAI's retry-after-ms is
// precise, so the floor under a server hint is 100ms rather than heed's
// default of 1s; everything else is heed's default (5 attempts, a wait
// longer than 60s defers).
var policy = heed.Policy{
	Name:    "openai",
	MinWait: 100 * time.Millisecond,
}

// client is an OpenAI SDK client whose HTTP traffic goes through heed.
type client struct {
	openai.Client
	hc *http.Client
}

// newClient returns an SDK client for baseURL. The SDK's own retries are
// off: it would retry an insufficient_quota 429 and sleep through a
// deadline. heed is the only retry layer, as the *http.Client's transport.
func newClient(baseURL, apiKey string, log *zap.Logger) *client {
	hc := sdkdemo.HTTPClient(heed.WithPolicy(policy), heed.WithLogger(log))
	return &client{
		Client: openai.NewClient(
			option.WithBaseURL(baseURL),
			option.WithAPIKey(apiKey),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0),
		),
		hc: hc,
	}
}

// Close closes the client's idle connections.
func (c *client) Close() { c.hc.CloseIdleConnections() }
