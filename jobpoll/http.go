// The HTTP checker: a status check as a GET through a heed Transport.

package jobpoll

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heed-go/heed"
)

// Defaults of HTTPChecker.
const (
	// DefaultCheckElapsed is the time limit of one status check, retries and
	// waits included, of the client HTTPChecker uses when its Client is
	// nil. It is separate from the job's deadline.
	DefaultCheckElapsed = 30 * time.Second
	// DefaultMaxBody is the largest status body HTTPChecker reads when its
	// MaxBody is 0.
	DefaultMaxBody = 1 << 20
)

// defaultClient sends the status checks of HTTPCheckers without a Client:
// its heed Transport retries each check within a time limit of its own.
var defaultClient = &http.Client{Transport: heed.New(nil, heed.WithPolicy(heed.Policy{
	Name:       "jobpoll",
	MaxElapsed: DefaultCheckElapsed,
}))}

// HTTPChecker checks a job with a request to its status URL (a GET unless
// Method says otherwise) and reads the state from a field of the JSON body. It is a Checker; the zero value of an
// optional field means the default given in its comment.
type HTTPChecker struct {
	// URL is the job's status URL. Required.
	URL string
	// Field is the path of the state in the JSON body, as ParsePath reads
	// it: "status", "properties.status", "jobs[0].state". Required.
	Field string
	// Header is sent with every status request: Authorization, an API
	// version. Accept defaults to application/json. Default: none.
	Header http.Header
	// Client sends the status requests. Give it a heed Transport of its
	// own, so that a failed check is retried within a time limit separate from
	// the job's deadline (heed.Policy.MaxElapsed). Default: a client shared
	// by all HTTPCheckers without one, whose Transport is heed.New(nil,
	// heed.WithPolicy(heed.Policy{Name: "jobpoll", MaxElapsed: 30s})).
	Client *http.Client
	// MaxBody is the largest status body read, in bytes: a larger 2xx body
	// is a *BodyTooLargeError, read no further than MaxBody+1 bytes; an
	// *HTTPError keeps the first MaxBody bytes. Default 1 MiB.
	MaxBody int64
	// Method is the status request's method, for APIs that report a job's
	// state in answer to a POST (a query or RPC-style endpoint). The
	// client's Transport retries it as it would any request of that
	// method: a POST whose response was lost is sent again only when the
	// request is replay-safe, for instance when the client's policy sets
	// KeyHeader (heed then adds a key to each check) or Header carries an
	// Idempotency-Key. Default GET.
	Method string
	// Body is sent, whole, with every status request; Content-Type
	// defaults to application/json when Body is set. Default: none.
	Body []byte
}

// Check sends one status request and returns the state found at Field,
// the server's hint for the next check (heed.Hint: Retry-After and the
// other rate-limit headers), and the body. A response other than 2xx is an
// *HTTPError; a 2xx body longer than MaxBody is a *BodyTooLargeError; a
// body without a usable state is a *FieldError. A *heed.DeferredError from
// the client's Transport comes back wrapped, so that errors.As finds it.
func (h *HTTPChecker) Check(ctx context.Context) (Status, error) {
	path, err := ParsePath(h.Field)
	if err != nil {
		return Status{}, err
	}
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	var reqBody io.Reader
	if h.Body != nil {
		reqBody = bytes.NewReader(h.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL, reqBody)
	if err != nil {
		return Status{}, fmt.Errorf("jobpoll: status request: %w", err)
	}
	for k, vs := range h.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if h.Body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := h.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Status{}, err
	}
	defer resp.Body.Close()
	limit := h.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return Status{}, fmt.Errorf("jobpoll: reading status body: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The status says what went wrong; the body only illustrates it.
		return Status{}, &HTTPError{StatusCode: resp.StatusCode, Body: body[:min(int64(len(body)), limit)]}
	}
	if int64(len(body)) > limit {
		return Status{}, &BodyTooLargeError{Limit: limit}
	}
	hint, _, hinted := heed.Hint(resp, time.Now())
	state, err := path.Lookup(body)
	if err != nil {
		return Status{Hint: hint, Hinted: hinted, Body: body}, err
	}
	return Status{State: state, Hint: hint, Hinted: hinted, Body: body}, nil
}

// HTTPError is a status response other than 2xx, delivered after the
// client's retries. It is about the status endpoint, not the job.
type HTTPError struct {
	// StatusCode is the response's status code.
	StatusCode int
	// Body is the response's body, up to HTTPChecker.MaxBody bytes.
	Body []byte
}

// Error returns "jobpoll: status check: HTTP CODE TEXT".
func (e *HTTPError) Error() string {
	return "jobpoll: status check: HTTP " + strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
}

// BodyTooLargeError is a 2xx status response whose body is longer than
// HTTPChecker.MaxBody. The status endpoint answered, but not with a status
// jobpoll reads: like a *FieldError, it is about the response's content,
// not about reaching the endpoint, nor about the job.
type BodyTooLargeError struct {
	// Limit is the HTTPChecker's MaxBody, in bytes.
	Limit int64
}

// Error returns "jobpoll: status body larger than LIMIT bytes".
func (e *BodyTooLargeError) Error() string {
	return "jobpoll: status body larger than " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// OperationURL returns the status URL of a long-running operation from the
// response that started it, as Azure and Microsoft REST APIs announce it:
// the Azure-AsyncOperation header, else Operation-Location, resolved
// against the request's URL. Poll it with an HTTPChecker whose Field is
// "status" (NotStarted, Running, Succeeded, Failed, Canceled); the
// response's Retry-After, read with heed.Hint, is the wait before the
// first check (see Poller.PollAt).
func OperationURL(resp *http.Response) (*url.URL, bool) {
	if resp == nil {
		return nil, false
	}
	for _, h := range []string{"Azure-AsyncOperation", "Operation-Location"} {
		v := resp.Header.Get(h)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil {
			continue
		}
		if resp.Request != nil && resp.Request.URL != nil {
			u = resp.Request.URL.ResolveReference(u)
		}
		if !u.IsAbs() {
			continue
		}
		return u, true
	}
	return nil, false
}
