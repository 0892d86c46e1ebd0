package main

import (
	"io"
	"net/http"

	"github.com/hashicorp/go-retryablehttp"
)

// retryableClient is hashicorp/go-retryablehttp as its README shows it:
// NewClient, whose DefaultBackoff honours Retry-After on 429 and 503, with
// the logger off and the common retry settings.
type retryableClient struct {
	c *retryablehttp.Client
}

func newRetryablehttp(next http.RoundTripper) Doer {
	c := retryablehttp.NewClient()
	if next != nil {
		c.HTTPClient.Transport = next
	}
	c.Logger = nil
	c.RetryMax = retries
	c.RetryWaitMin = backoffFirst
	c.RetryWaitMax = backoffCap
	return &retryableClient{c: c}
}

func (r *retryableClient) Do(c *Call) Result {
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
	return finish(r.c.Do(req))
}

func (r *retryableClient) Close() { r.c.HTTPClient.CloseIdleConnections() }
