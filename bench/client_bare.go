package main

import "net/http"

// bare is net/http alone: no retries, the baseline.
type bare struct {
	t  *http.Transport
	hc *http.Client
}

func newBare() Doer {
	t := newTransport()
	return &bare{t: t, hc: &http.Client{Transport: t}}
}

func (b *bare) Do(c *Call) Result {
	req, err := stdRequest(c)
	if err != nil {
		return Result{Err: err}
	}
	return finish(b.hc.Do(req))
}

func (b *bare) Close() { b.t.CloseIdleConnections() }
