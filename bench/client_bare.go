package main

import "net/http"

// bare is net/http alone: no retries, the baseline.
type bare struct {
	t  http.RoundTripper
	hc *http.Client
}

func newBare(next http.RoundTripper) Doer {
	t := transportOr(next)
	return &bare{t: t, hc: &http.Client{Transport: t}}
}

func (b *bare) Do(c *Call) Result {
	req, err := stdRequest(c)
	if err != nil {
		return Result{Err: err}
	}
	return finish(b.hc.Do(req))
}

func (b *bare) Close() { closeIdle(b.t) }
