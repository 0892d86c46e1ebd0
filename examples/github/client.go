// The go-github client, with heed as its HTTP transport.

package main

import (
	"net/http"

	"github.com/google/go-github/v93/github"
	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"go.uber.org/zap"
)

// policy is how heed treats GitHub calls: heed's defaults (5 attempts, a
// wait longer than 60s defers). Its scope is the API host; within it, each
// limit GitHub names (x-ratelimit-resource: core, search…) is a scope of
// its own, so a spent search limit holds search calls only.
var policy = heed.Policy{Name: "github"}

// client is a go-github client whose HTTP traffic goes through heed.
type client struct {
	*github.Client
	hc *http.Client
}

// newClient returns a go-github client for baseURL (empty: api.github.com)
// with token (empty: unauthenticated) sending through heed with opts.
// Unless sdkCheck, go-github's own rate-limit check is off
// (github.WithDisableRateLimitCheck), so every call reaches heed, which
// waits or defers; left on, go-github answers a call it believes limited
// with a *github.RateLimitError without sending it.
func newClient(baseURL, token string, log *zap.Logger, sdkCheck bool, opts ...heed.Option) (*client, error) {
	hc := sdkdemo.HTTPClient(append([]heed.Option{heed.WithPolicy(policy), heed.WithLogger(log)}, opts...)...)
	gopts := []github.ClientOptionsFunc{github.WithHTTPClient(hc)}
	if !sdkCheck {
		gopts = append(gopts, github.WithDisableRateLimitCheck())
	}
	if baseURL != "" {
		gopts = append(gopts, github.WithURLs(&baseURL, &baseURL))
	}
	if token != "" {
		gopts = append(gopts, github.WithAuthToken(token))
	}
	gc, err := github.NewClient(gopts...)
	if err != nil {
		return nil, err
	}
	return &client{Client: gc, hc: hc}, nil
}

// Close closes the client's idle connections.
func (c *client) Close() { c.hc.CloseIdleConnections() }
