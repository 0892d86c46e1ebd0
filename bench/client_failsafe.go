package main

import (
	"net/http"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
)

// failsafeClient is failsafe-go's failsafehttp round tripper with the retry
// policy its docs recommend for HTTP: NewRetryPolicyBuilder, which retries
// 429 and 5xx and delays by Retry-After through failsafehttp.DelayFunc,
// plus backoff for responses without one.
type failsafeClient struct {
	t  http.RoundTripper
	hc *http.Client
}

func newFailsafe(next http.RoundTripper) Doer {
	t := transportOr(next)
	policy := failsafehttp.NewRetryPolicyBuilder().
		WithBackoff(backoffFirst, backoffCap).
		WithMaxRetries(retries).
		Build()
	return &failsafeClient{t: t, hc: &http.Client{Transport: failsafehttp.NewRoundTripper(t, policy)}}
}

func (f *failsafeClient) Do(c *Call) Result {
	req, err := stdRequest(c)
	if err != nil {
		return Result{Err: err}
	}
	return finish(f.hc.Do(req))
}

func (f *failsafeClient) Close() { closeIdle(f.t) }
