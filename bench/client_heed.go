package main

import (
	"net/http"

	"github.com/heed-go/heed"
)

// heedClient is an http.Client with heed as its Transport: the defaults,
// with as many attempts as the peers are given.
type heedClient struct {
	t  http.RoundTripper
	hc *http.Client
}

func newHeed(next http.RoundTripper) Doer {
	t := transportOr(next)
	rt := heed.New(t, heed.WithPolicy(heed.Policy{MaxAttempts: retries + 1}))
	return &heedClient{t: t, hc: &http.Client{Transport: rt}}
}

func (h *heedClient) Do(c *Call) Result {
	req, err := stdRequest(c)
	if err != nil {
		return Result{Err: err}
	}
	return finish(h.hc.Do(req))
}

func (h *heedClient) Close() { closeIdle(h.t) }
