package main

import (
	"context"
	"net/http"
	"os"
	"time"
)

// Every retrying client is configured alike, as close as its options allow:
// 5 retries (6 attempts), exponential backoff from 1 s capped at 30 s when
// the server gives no hint, and the server's Retry-After honoured the way
// the library's documentation recommends.
const (
	retries      = 5
	backoffFirst = time.Second
	backoffCap   = 30 * time.Second
)

// Client is one column of the table: a library, configured as its users
// would, behind one small interface.
type Client struct {
	Name   string // what -clients selects
	Column string // the table's header
	Extra  bool   // only when named in -clients, not in "all"
	// New returns a fresh client that sends through next, or through a
	// connection pool of its own when next is nil.
	New func(next http.RoundTripper) Doer
}

// Doer sends one logical request the library's way, retries included, and
// reads and closes the response.
type Doer interface {
	Do(c *Call) Result
	// Close releases idle connections.
	Close()
}

// Call is one logical request.
type Call struct {
	Ctx    context.Context
	Method string
	URL    string
	Header map[string]string
	Body   []byte   // the body, if any and File is nil
	File   *os.File // the body streamed from a file, Size bytes long
	Size   int64
}

// Result is what the caller got.
type Result struct {
	Status int   // 0 when err is set
	Err    error // as the library returned it
	Read   int   // response body bytes read
}

// clients lists the columns, in table order.
var clients = []Client{
	{Name: "bare", Column: "bare net/http", New: newBare},
	{Name: "retryablehttp", Column: "go-retryablehttp", New: newRetryablehttp},
	{Name: "failsafe", Column: "failsafe-go", New: newFailsafe},
	{Name: "resty", Column: "resty v2", New: newResty},
	{Name: "heed", Column: "heed", New: newHeed},
	{Name: "heed-retryable", Column: "go-retryablehttp + heed/retryable", New: newHeedRetryable, Extra: true},
}

// clientNamed returns the client called name.
func clientNamed(name string) (Client, bool) {
	for _, c := range clients {
		if c.Name == name {
			return c, true
		}
	}
	return Client{}, false
}

// transportOr returns next, or when nil a transport of its own configured
// as http.DefaultTransport is.
func transportOr(next http.RoundTripper) http.RoundTripper {
	if next != nil {
		return next
	}
	return http.DefaultTransport.(*http.Transport).Clone()
}

// closeIdle closes rt's idle connections, if it has any.
func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// stdRequest builds the request a net/http user would: the body from a
// bytes.Reader (so GetBody is set) or from the file with its length.
func stdRequest(c *Call) (*http.Request, error) {
	var req *http.Request
	var err error
	switch {
	case c.File != nil:
		req, err = http.NewRequestWithContext(c.Ctx, c.Method, c.URL, c.File)
		if err == nil {
			req.ContentLength = c.Size
		}
	case c.Body != nil:
		req, err = http.NewRequestWithContext(c.Ctx, c.Method, c.URL, bytesReader(c.Body))
	default:
		req, err = http.NewRequestWithContext(c.Ctx, c.Method, c.URL, nil)
	}
	if err != nil {
		return nil, err
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	return req, nil
}

// finish reads and closes what an http.Client returned.
func finish(resp *http.Response, err error) Result {
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return Result{Err: err}
	}
	n, rerr := readAll(resp.Body)
	resp.Body.Close()
	return Result{Status: resp.StatusCode, Err: rerr, Read: n}
}
