// The recorder: what the inner transport saw of each attempt.

package retryable

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// attempt is what the recorder saw of one request it sent.
type attempt struct {
	req  *http.Request // as handed to the transport: a redirect's last hop
	took time.Duration // from send to response headers, or to the error
	err  error         // the transport's own error, before http.Client wraps it

	// claimed is set once CheckRetry has judged the response; wait is the
	// wait it chose, for Backoff to return.
	claimed bool
	wait    time.Duration
}

// recorder is the Transport Configure gives the client's http.Client. It
// sends through next and remembers, per response or error, the request and
// how long the attempt took: retryablehttp's hooks are not told.
type recorder struct {
	next  http.RoundTripper
	owner *adapter

	// live maps each response not yet judged by CheckRetry, or judged and
	// awaiting Backoff, to its attempt.
	live sync.Map // *http.Response → *attempt
}

// RoundTrip sends req through the wrapped transport and records the attempt.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := r.next.RoundTrip(req)
	at := &attempt{req: req, took: time.Since(start)}
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // http.Client would ignore it
		}
		at.err = err
		return nil, &attemptError{err: err, at: at}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols || resp.Body == nil {
		return resp, nil // keep an upgraded connection's body as it is
	}
	r.live.Store(resp, at)
	// A response CheckRetry never sees (a redirect http.Client follows, or
	// a caller using the http.Client directly) is forgotten when closed.
	resp.Body = &trackedBody{ReadCloser: resp.Body, r: r, resp: resp, at: at}
	return resp, nil
}

// CloseIdleConnections forwards to the wrapped transport.
func (r *recorder) CloseIdleConnections() {
	if c, ok := r.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// claim returns the attempt that produced resp, and restores the body the
// transport gave it. It leaves the attempt recorded when keep is set, for
// Backoff.
func (r *recorder) claim(resp *http.Response, keep bool) *attempt {
	if resp == nil {
		return nil
	}
	var at *attempt
	if keep {
		if v, ok := r.live.Load(resp); ok {
			at = v.(*attempt)
		}
	} else if v, ok := r.live.LoadAndDelete(resp); ok {
		at = v.(*attempt)
	}
	if at != nil {
		at.claimed = true
	}
	if tb, ok := resp.Body.(*trackedBody); ok && tb.r == r && !keep {
		resp.Body = tb.ReadCloser
	}
	return at
}

// forget drops what is recorded of resp.
func (r *recorder) forget(resp *http.Response) {
	if resp != nil {
		r.claim(resp, false)
	}
}

// trackedBody forgets its response's attempt when closed unread by the
// adapter's hooks.
type trackedBody struct {
	io.ReadCloser
	r    *recorder
	resp *http.Response
	at   *attempt
}

func (b *trackedBody) Close() error {
	if !b.at.claimed {
		b.r.live.Delete(b.resp)
	}
	return b.ReadCloser.Close()
}

// attemptError carries a transport error with its attempt up through
// http.Client, which wraps it in a *url.Error. ErrorHandler unwraps it
// again, so callers see the transport's error as it was.
type attemptError struct {
	err error
	at  *attempt
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }
