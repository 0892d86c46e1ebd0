package main

import (
	"io"
	"net/http"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/retryable"
)

// heedRetryable is go-retryablehttp with heed's decisions installed by
// retryable.Configure: the adapter, for programs that keep retryablehttp.
// It is not in the default set of columns; choose it with -clients.
type heedRetryable struct {
	c *retryablehttp.Client
}

func newHeedRetryable(next http.RoundTripper) Doer {
	c := retryablehttp.NewClient()
	c.Logger = nil
	if next != nil {
		c.HTTPClient.Transport = next
	}
	retryable.Configure(c, heed.WithPolicy(heed.Policy{MaxAttempts: retries + 1}))
	return &heedRetryable{c: c}
}

func (h *heedRetryable) Do(c *Call) Result {
	var body any
	switch {
	case c.File != nil:
		body = io.ReadSeeker(c.File)
	case c.Body != nil:
		body = c.Body
	}
	req, err := retryablehttp.NewRequestWithContext(c.Ctx, c.Method, c.URL, body)
	if err != nil {
		return Result{Err: err}
	}
	if c.File != nil {
		req.ContentLength = c.Size
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	return finish(h.c.Do(req))
}

func (h *heedRetryable) Close() { h.c.HTTPClient.CloseIdleConnections() }
