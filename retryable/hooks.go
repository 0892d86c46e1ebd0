// Hooks: retryablehttp's Backoff and ErrorHandler, fed by the decision.

package retryable

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// backoff is the client's Backoff: the wait CheckRetry chose for this
// response. After a transport error CheckRetry has already waited, so it
// returns 0.
func (a *adapter) backoff(_, _ time.Duration, attemptNum int, resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if v, ok := a.rec.live.LoadAndDelete(resp); ok {
		return v.(*attempt).wait
	}
	if v, ok := a.waits.LoadAndDelete(resp); ok {
		return v.(time.Duration)
	}
	// Not recorded (the client's HTTPClient was replaced after
	// Configure): decide again from the response alone.
	if resp.Request == nil {
		return 0
	}
	p := a.policy(firstHop(resp.Request))
	_, wait := chooseWait(resp, p.Classify(resp.Request, resp, nil), p, attemptNum+1, time.Now())
	return wait
}

// errorHandler is the client's ErrorHandler, called when retryablehttp
// gives up: it returns the last response as it is when there is no error,
// and otherwise the error alone, the transport's own rather than the
// adapter's wrapping of it.
func (a *adapter) errorHandler(resp *http.Response, err error, numTries int) (*http.Response, error) {
	a.rec.forget(resp)
	if err == nil {
		if resp != nil {
			return resp, nil
		}
		return nil, fmt.Errorf("retryable: giving up after %d attempt(s)", numTries)
	}
	discard(resp)
	return nil, unwrapAttempt(err)
}

// unwrapAttempt removes the recorder's wrapping from an error http.Client
// returned.
func unwrapAttempt(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ae, ok := ue.Err.(*attemptError); ok {
			ue.Err = ae.err
		}
		return err
	}
	if ae, ok := err.(*attemptError); ok {
		return ae.err
	}
	return err
}

// discardBytes bounds how much of a response that is not delivered is read
// so that its connection can be reused.
const discardBytes = 64 << 10

// discard drains a little of resp's body and closes it.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, discardBytes)
	resp.Body.Close()
}
