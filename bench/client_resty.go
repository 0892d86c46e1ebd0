package main

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"
)

// restyClient is go-resty v2 configured as its README's "Retries" section
// shows: a retry count, wait times, a retry condition for 429 and 5xx that
// keeps retrying errors, and a SetRetryAfter callback that reads the
// server's Retry-After (resty v2 has no parser of its own).
type restyClient struct {
	c *resty.Client
}

func newResty(next http.RoundTripper) Doer {
	c := resty.New()
	if next != nil {
		c.SetTransport(next)
	}
	c.
		SetRetryCount(retries).
		SetRetryWaitTime(backoffFirst).
		SetRetryMaxWaitTime(backoffCap).
		SetRetryAfter(retryAfter).
		AddRetryCondition(func(r *resty.Response, err error) bool {
			return err != nil || r == nil || r.StatusCode() == http.StatusTooManyRequests || r.StatusCode() >= 500
		}).
		SetLogger(quietLogger{})
	return &restyClient{c: c}
}

// retryAfter is the SetRetryAfter callback: Retry-After in seconds or as an
// HTTP-date, 0 ("use the default backoff") when absent or invalid.
func retryAfter(_ *resty.Client, r *resty.Response) (time.Duration, error) {
	v := strings.TrimSpace(r.Header().Get("Retry-After"))
	if v == "" {
		return 0, nil
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, nil
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), nil
	}
	return 0, nil
}

func (r *restyClient) Do(c *Call) Result {
	req := r.c.R().SetContext(c.Ctx).SetHeaders(c.Header)
	switch {
	case c.File != nil:
		req.SetBody(c.File)
	case c.Body != nil:
		req.SetBody(c.Body)
	}
	resp, err := req.Execute(c.Method, c.URL)
	if err != nil {
		return Result{Err: err}
	}
	return Result{Status: resp.StatusCode(), Read: len(resp.Body())}
}

func (r *restyClient) Close() { r.c.GetClient().CloseIdleConnections() }

// quietLogger drops resty's log lines, which would otherwise go to stderr.
type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}
