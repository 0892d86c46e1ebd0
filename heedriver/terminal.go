// Terminal failures: how a worker hands back a response no retry fixes, so
// the Middleware can cancel its job.

package heedriver

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heed-go/heed"
)

// TerminalError reports a failure that no retry fixes (auth, billing,
// quota, validation, not found). Terminal returns one for a response
// heed.DefaultClassifier classes heed.Terminal; a worker may also return
// one of its own for any other such failure. With WithCancelTerminal, the
// Middleware cancels a job whose Work returns an error wrapping one.
type TerminalError struct {
	Method string // the request's method, "" when unknown
	URL    string // the request's URL without userinfo, query or fragment, "" when unknown
	Status int    // the response's status, 0 when there was none
	Reason string // why no retry fixes it, such as heed's "not found" or "unauthorized"
}

// Error describes the failure, with no query string or userinfo of the
// request's URL.
func (e *TerminalError) Error() string {
	var b strings.Builder
	b.WriteString("heedriver: ")
	if e.Method != "" || e.URL != "" {
		b.WriteString(strings.TrimSpace(e.Method + " " + e.URL))
		b.WriteString(": ")
	}
	b.WriteString("terminal: ")
	b.WriteString(e.Reason)
	if e.Status != 0 {
		b.WriteString(" (status ")
		b.WriteString(strconv.Itoa(e.Status))
		b.WriteByte(')')
	}
	return b.String()
}

// Terminal returns a *TerminalError when heed.DefaultClassifier classes
// resp as heed.Terminal, and nil for any other response, a success or a
// retryable failure alike. Terminal are 400 (but an AWS throttling code),
// 401, 402, 404, 422 and other 4xx but 408, 409 with a key, 425 and 429;
// 501 and 505; a 429 or 403 naming a spent quota or balance; any response
// with Stripe-Should-Retry or x-should-retry: false; and a 403, but one with
// Retry-After, X-RateLimit-Remaining: 0, GitHub's secondary-limit body or
// Salesforce's concurrent-request limit, which is Throttled and gives nil.
// Call it on a response heed delivered:
//
//	if err := heedriver.Terminal(resp); err != nil {
//		return err // cancelled with WithCancelTerminal
//	}
//
// It neither closes resp.Body nor consumes it: the classifier may peek at
// the start of the body and leaves it whole. A nil resp gives nil.
func Terminal(resp *http.Response) error {
	if resp == nil {
		return nil
	}
	req := resp.Request
	if req == nil {
		req = &http.Request{Header: http.Header{}, URL: &url.URL{}}
	}
	v := heed.DefaultClassifier(req, resp, nil)
	if v.Class != heed.Terminal {
		return nil
	}
	return &TerminalError{
		Method: req.Method,
		URL:    redact(req.URL),
		Status: resp.StatusCode,
		Reason: v.Reason,
	}
}

// redact returns u without userinfo, query or fragment.
func redact(u *url.URL) string {
	if u == nil || (u.Host == "" && u.Path == "") {
		return ""
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}
