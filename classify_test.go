package heed_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// classifyResp is a response built for a classifier test, with a body that
// records whether it was closed.
func classifyResp(status int, h http.Header, body string) (*http.Response, *trackedBody) {
	if h == nil {
		h = http.Header{}
	}
	tb := &trackedBody{Reader: strings.NewReader(body)}
	return &http.Response{StatusCode: status, Header: h, Body: tb, ContentLength: int64(len(body))}, tb
}

const (
	ctJSON    = "application/json; charset=utf-8"
	ctProblem = "application/problem+json"
)

func TestDefaultClassifierResponses(t *testing.T) {
	long := strings.Repeat("x", 5000)
	withKey := hdr("Idempotency-Key", "k-1")
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		reqHdr http.Header
		class  heed.Class
		reason string
	}{
		// 1xx, 2xx and 3xx are delivered.
		{"200", 200, hdr("Content-Type", ctJSON), `{"ok":true}`, nil, heed.Deliver, "ok"},
		{"201", 201, nil, "", nil, heed.Deliver, "ok"},
		{"204", 204, nil, "", nil, heed.Deliver, "ok"},
		{"301", 301, hdr("Location", "/x"), "", nil, heed.Deliver, "ok"},
		{"304", 304, nil, "", nil, heed.Deliver, "ok"},
		{"101", 101, nil, "", nil, heed.Deliver, "ok"},
		{"200 with Retry-After", 200, hdr("Retry-After", "5"), "", nil, heed.Deliver, "ok"},

		// 429: throttled, unless the body says quota or billing.
		{"429 bare", 429, nil, "", nil, heed.Throttled, "rate limited"},
		{"429 retry-after", 429, hdr("Retry-After", "3"), "slow down", nil, heed.Throttled, "rate limited"},
		{"429 json rate limit", 429, hdr("Content-Type", ctJSON), `{"error":{"code":"rate_limit_exceeded","type":"requests"}}`, nil, heed.Throttled, "rate limited"},
		{"429 json error string", 429, hdr("Content-Type", ctJSON), `{"error":"slow down"}`, nil, heed.Throttled, "rate limited"},
		{"429 openai insufficient_quota code", 429, hdr("Content-Type", ctJSON), `{"error":{"message":"You exceeded your current quota","type":"x","param":null,"code":"insufficient_quota"}}`, nil, heed.Terminal, "billing"},
		{"429 openai insufficient_quota type", 429, hdr("Content-Type", ctJSON), `{"error":{"type":"insufficient_quota","code":null}}`, nil, heed.Terminal, "billing"},
		{"429 error string insufficient_quota", 429, hdr("Content-Type", ctJSON), `{"error":"insufficient_quota"}`, nil, heed.Terminal, "billing"},
		{"429 insufficient_quota no content type", 429, nil, ` {"error":{"code":"insufficient_quota"}}`, nil, heed.Terminal, "billing"},
		{"429 insufficient_quota text/plain", 429, hdr("Content-Type", "text/plain"), `{"error":{"code":"insufficient_quota"}}`, nil, heed.Terminal, "billing"},
		{"429 insufficient_quota with retry-after", 429, hdr("Content-Type", ctJSON, "Retry-After", "20"), `{"error":{"code":"insufficient_quota"}}`, nil, heed.Terminal, "billing"},
		{"429 html is not peeked", 429, hdr("Content-Type", "text/html"), `<p>insufficient_quota</p>`, nil, heed.Throttled, "rate limited"},
		{"429 not json", 429, nil, `insufficient_quota`, nil, heed.Throttled, "rate limited"},
		{"429 marker only in a message of valid json", 429, hdr("Content-Type", ctJSON), `{"error":{"code":"rate_limit_exceeded","message":"not insufficient_quota"}}`, nil, heed.Throttled, "rate limited"},
		{"429 json cut short by the peek", 429, hdr("Content-Type", ctJSON), `{"error":{"code":"insufficient_quota","message":"` + long + `"}}`, nil, heed.Terminal, "billing"},
		{"429 json cut short by the server", 429, hdr("Content-Type", ctJSON), `{"error":{"type":"insufficient_quota","mess`, nil, heed.Terminal, "billing"},
		{"429 marker past the peek limit", 429, hdr("Content-Type", ctJSON), `{"pad":"` + long + `","error":{"code":"insufficient_quota"}}`, nil, heed.Throttled, "rate limited"},
		{"429 problem quota-exceeded no reset", 429, hdr("Content-Type", ctProblem), `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"quota"}`, nil, heed.Terminal, "quota"},
		{"429 problem quota-exceeded cut short, after a non-string type", 429, hdr("Content-Type", ctProblem), `{"violated-policies":[{"type":{"unit":"requests"}}],"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"quota exceeded","detail":"` + strings.Repeat("x", 5000) + `"}`, nil, heed.Terminal, "quota"},
		{"429 problem quota-exceeded path form", 429, hdr("Content-Type", ctProblem), `{"type":"https://example.com/probs/quota-exceeded"}`, nil, heed.Terminal, "quota"},
		{"429 problem quota-exceeded with retry-after", 429, hdr("Content-Type", ctProblem, "Retry-After", "30"), `{"type":"https://example.com/probs/quota-exceeded"}`, nil, heed.Throttled, "rate limited"},
		{"429 problem quota-exceeded with invalid retry-after", 429, hdr("Content-Type", ctProblem, "Retry-After", "soon"), `{"type":"https://example.com/probs/quota-exceeded"}`, nil, heed.Terminal, "quota"},
		{"429 problem quota-exceeded cut short", 429, hdr("Content-Type", ctProblem), `{"type" : "https://example.com/probs/quota-exceeded", "detail":"` + long + `"}`, nil, heed.Terminal, "quota"},
		{"429 problem other type", 429, hdr("Content-Type", ctProblem), `{"type":"https://example.com/probs/too-many-requests"}`, nil, heed.Throttled, "rate limited"},
		{"429 problem type not a string", 429, hdr("Content-Type", ctProblem), `{"type":42}`, nil, heed.Throttled, "rate limited"},

		// 503 and 529.
		{"503", 503, nil, "", nil, heed.Throttled, "unavailable"},
		{"503 retry-after", 503, hdr("Retry-After", "120"), "", nil, heed.Throttled, "unavailable"},
		{"503 s3 slowdown", 503, hdr("Content-Type", "application/xml"), `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`, nil, heed.Throttled, "slow down"},
		{"503 s3 other code", 503, hdr("Content-Type", "application/xml"), `<Error><Code>ServiceUnavailable</Code></Error>`, nil, heed.Throttled, "unavailable"},
		{"503 slowdown text not xml", 503, hdr("Content-Type", "text/plain"), `<Code>SlowDown</Code>`, nil, heed.Throttled, "unavailable"},
		{"529", 529, hdr("Content-Type", ctJSON), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, nil, heed.Throttled, "overloaded"},

		// 403: a rate limit only with a rate-limit signal.
		{"403", 403, hdr("Content-Type", ctJSON), `{"message":"Resource not accessible by integration"}`, nil, heed.Terminal, "forbidden"},
		{"403 retry-after", 403, hdr("Retry-After", "60"), "", nil, heed.Throttled, "rate limited"},
		{"403 x-ratelimit-remaining 0", 403, hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1372700873"), "", nil, heed.Throttled, "rate limited"},
		{"403 x-ratelimit-remaining lower case key", 403, http.Header{"X-Ratelimit-Remaining": {" 0 "}}, "", nil, heed.Throttled, "rate limited"},
		{"403 x-ratelimit-remaining 10", 403, hdr("X-RateLimit-Remaining", "10"), "", nil, heed.Terminal, "forbidden"},
		{"403 github secondary limit message", 403, hdr("Content-Type", ctJSON), `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`, nil, heed.Throttled, "rate limited"},
		{"403 html secondary text is not peeked", 403, hdr("Content-Type", "text/html"), `secondary rate limit`, nil, heed.Terminal, "forbidden"},

		// Other 4xx.
		{"400", 400, nil, "", nil, heed.Terminal, "client error"},
		{"401", 401, nil, "", nil, heed.Terminal, "unauthorized"},
		{"402", 402, nil, "", nil, heed.Terminal, "billing"},
		{"404", 404, nil, "", nil, heed.Terminal, "not found"},
		{"405", 405, nil, "", nil, heed.Terminal, "client error"},
		{"410", 410, nil, "", nil, heed.Terminal, "client error"},
		{"413", 413, nil, "", nil, heed.Terminal, "client error"},
		{"422", 422, nil, "", nil, heed.Terminal, "unprocessable"},
		{"422 with key", 422, nil, "", withKey, heed.Terminal, "unprocessable"},
		{"408", 408, nil, "", nil, heed.Transient, "request timeout"},
		{"425", 425, nil, "", nil, heed.Transient, "too early"},
		{"409 without key", 409, nil, "", nil, heed.Terminal, "client error"},
		{"409 with Idempotency-Key", 409, nil, "", withKey, heed.Transient, "in progress"},
		{"409 with X-Idempotency-Key", 409, nil, "", hdr("X-Idempotency-Key", "k-2"), heed.Transient, "in progress"},
		{"409 with empty key", 409, nil, "", hdr("Idempotency-Key", ""), heed.Terminal, "client error"},

		// 5xx.
		{"500", 500, nil, "", nil, heed.Ambiguous, "server error"},
		{"502", 502, nil, "", nil, heed.Ambiguous, "server error"},
		{"504", 504, nil, "", nil, heed.Ambiguous, "server error"},
		{"507", 507, nil, "", nil, heed.Ambiguous, "server error"},
		{"599", 599, nil, "", nil, heed.Ambiguous, "server error"},
		{"501", 501, nil, "", nil, heed.Terminal, "not implemented"},
		{"505", 505, nil, "", nil, heed.Terminal, "version not supported"},

		// Stripe-Should-Retry and x-should-retry.
		{"should-retry false on 500", 500, hdr("Stripe-Should-Retry", "false"), "", nil, heed.Terminal, "should not retry"},
		{"should-retry false on 429", 429, hdr("Stripe-Should-Retry", "false", "Retry-After", "1"), "", nil, heed.Terminal, "should not retry"},
		{"should-retry false on 409 with key", 409, hdr("Stripe-Should-Retry", "false"), "", withKey, heed.Terminal, "should not retry"},
		{"should-retry false on 200", 200, hdr("Stripe-Should-Retry", "false"), "", nil, heed.Terminal, "should not retry"},
		{"x-should-retry false on 503", 503, hdr("X-Should-Retry", "false"), "", nil, heed.Terminal, "should not retry"},
		{"x-should-retry FALSE spaced", 529, http.Header{"X-Should-Retry": {" FALSE "}}, "", nil, heed.Terminal, "should not retry"},
		{"should-retry true on 500", 500, hdr("Stripe-Should-Retry", "true"), "", nil, heed.Transient, "should retry"},
		{"should-retry true on 400", 400, hdr("Stripe-Should-Retry", "true"), "", nil, heed.Transient, "should retry"},
		{"should-retry true on 409 without key", 409, hdr("Stripe-Should-Retry", "true"), "", nil, heed.Transient, "should retry"},
		{"should-retry true on 501", 501, hdr("Stripe-Should-Retry", "true"), "", nil, heed.Transient, "should retry"},
		{"x-should-retry true on 502", 502, hdr("X-Should-Retry", "True"), "", nil, heed.Transient, "should retry"},
		{"should-retry true keeps 429 throttled", 429, hdr("Stripe-Should-Retry", "true"), "", nil, heed.Throttled, "rate limited"},
		{"x-should-retry true keeps 529 throttled", 529, hdr("X-Should-Retry", "true"), "", nil, heed.Throttled, "overloaded"},
		{"should-retry true keeps 503 throttled", 503, hdr("X-Should-Retry", "true"), "", nil, heed.Throttled, "unavailable"},
		{"should-retry true keeps 403 rate limit throttled", 403, hdr("X-Should-Retry", "true", "Retry-After", "60"), "", nil, heed.Throttled, "rate limited"},
		{"should-retry true on 403 forbidden", 403, hdr("X-Should-Retry", "true"), "", nil, heed.Transient, "should retry"},
		{"should-retry true on 200", 200, hdr("Stripe-Should-Retry", "true"), "", nil, heed.Deliver, "ok"},
		{"should-retry true on 304", 304, hdr("Stripe-Should-Retry", "true"), "", nil, heed.Deliver, "ok"},
		{"should-retry headers disagree: false wins", 500, hdr("Stripe-Should-Retry", "true", "X-Should-Retry", "false"), "", nil, heed.Terminal, "should not retry"},
		{"should-retry garbage ignored", 500, hdr("Stripe-Should-Retry", "maybe"), "", nil, heed.Ambiguous, "server error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(t, t.Context(), "POST", "https://api.example/v1/x", nil)
			for k, vs := range tt.reqHdr {
				req.Header[k] = vs
			}
			resp, tb := classifyResp(tt.status, tt.header, tt.body)
			v := heed.DefaultClassifier(req, resp, nil)
			// The waits some bodies give are TestDefaultClassifierBodyWaits'.
			assert.Equal(t, heed.Verdict{Class: tt.class, Reason: tt.reason}, heed.Verdict{Class: v.Class, Reason: v.Reason}, "got %s %q", v.Class, v.Reason)
			// The body is whole and still closes the original.
			assert.Equal(t, tt.body, readBody(t, resp))
			assert.Equal(t, 1, tb.closes())
		})
	}
}

func TestDefaultClassifierNilRequest(t *testing.T) {
	resp, _ := classifyResp(409, nil, "")
	assert.Equal(t, heed.Verdict{Class: heed.Terminal, Reason: "client error"}, heed.DefaultClassifier(nil, resp, nil))
	resp, _ = classifyResp(429, nil, "")
	assert.Equal(t, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}, heed.DefaultClassifier(nil, resp, nil))
	assert.Equal(t, heed.Verdict{Class: heed.Ambiguous, Reason: "connection reset"}, heed.DefaultClassifier(nil, nil, resetErr))
	assert.Equal(t, heed.Verdict{Class: heed.Ambiguous, Reason: "transport error"}, heed.DefaultClassifier(nil, nil, nil))
}

// TestDefaultClassifierGitHubSecondaryAndSalesforce: GitHub's secondary
// limit without retry-after waits at least a minute, as its docs say, on a
// 403 or a 429; with retry-after, or X-RateLimit-Remaining: 0, those
// headers say the wait. Salesforce's REQUEST_LIMIT_EXCEEDED is Throttled for
// a concurrency limit, Terminal for the 24-hour total.
func TestDefaultClassifierGitHubSecondaryAndSalesforce(t *testing.T) {
	const secondary = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`
	minute := heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: time.Minute, Source: "GitHub secondary limit"}
	byHeader := heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}
	json := hdr("Content-Type", ctJSON)
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   heed.Verdict
	}{
		{"403 secondary, no header: a minute", 403, json, secondary, minute},
		{"429 secondary, no header: a minute", 429, json, secondary, minute},
		{"403 abuse detection: a minute", 403, json, `{"message":"You have triggered an abuse detection mechanism."}`, minute},
		{"403 secondary with retry-after: the header's", 403, hdr("Content-Type", ctJSON, "Retry-After", "30"), secondary, byHeader},
		{"429 secondary with retry-after: the header's", 429, hdr("Content-Type", ctJSON, "Retry-After", "30"), secondary, byHeader},
		{"403 secondary, remaining 0: the reset's", 403, hdr("Content-Type", ctJSON, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1715681251"), secondary, byHeader},
		{"403 secondary, remaining 00: the reset's, as Hint reads it", 403, hdr("Content-Type", ctJSON, "X-RateLimit-Remaining", "00", "X-RateLimit-Reset", "1715681251"), secondary, byHeader},
		{"429 secondary, remaining 0: the reset's", 429, hdr("Content-Type", ctJSON, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1715681251"), secondary, byHeader},
		{"Salesforce concurrent limit", 403, json, `[{"message":"ConcurrentPerOrgLongTxn Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]`, byHeader},
		{"Salesforce 24-hour total", 403, json, `[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]`, heed.Verdict{Class: heed.Terminal, Reason: "quota"}},
		{"Salesforce other 403", 403, json, `[{"message":"The REST API is not enabled for this Organization.","errorCode":"API_DISABLED_FOR_ORG"}]`, heed.Verdict{Class: heed.Terminal, Reason: "forbidden"}},
		{"Salesforce cut short, concurrent", 403, json, `[{"message":"ConcurrentPerOrgLongTxn Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"`, byHeader},
		{"Salesforce cut short, total", 403, json, `[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"`, heed.Verdict{Class: heed.Terminal, Reason: "quota"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkClassified(t, heed.DefaultClassifier, tt.status, tt.header, tt.body, tt.want)
		})
	}
}

// The body is read only where it can change the verdict.
func TestDefaultClassifierPeeksOnlyWhenUseful(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
		peeks  bool
	}{
		{"200 json", 200, hdr("Content-Type", ctJSON), false},
		{"500 json", 500, hdr("Content-Type", ctJSON), false},
		{"401 json", 401, hdr("Content-Type", ctJSON), false},
		{"429 html", 429, hdr("Content-Type", "text/html"), false},
		{"429 json should-retry false", 429, hdr("Content-Type", ctJSON, "Stripe-Should-Retry", "false"), false},
		{"403 with retry-after", 403, hdr("Content-Type", ctJSON, "Retry-After", "1"), false},
		{"503 json", 503, hdr("Content-Type", ctJSON), false},
		{"429 json", 429, hdr("Content-Type", ctJSON), true},
		{"429 problem", 429, hdr("Content-Type", ctProblem), true},
		{"429 no content type", 429, nil, true},
		{"403 json", 403, hdr("Content-Type", ctJSON), true},
		{"503 xml", 503, hdr("Content-Type", "application/xml"), true},
		{"400 json", 400, hdr("Content-Type", ctJSON), true},
		{"400 xml", 400, hdr("Content-Type", "text/xml"), true},
		{"400 with x-amzn-ErrorType", 400, hdr("Content-Type", ctJSON, "X-Amzn-ErrorType", "ValidationException"), false},
		{"400 text", 400, hdr("Content-Type", "text/plain"), false},
		{"422 json", 422, hdr("Content-Type", ctJSON), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, tb := classifyResp(tt.status, tt.header, `{"x":1}`)
			heed.DefaultClassifier(nil, resp, nil)
			if tt.peeks {
				assert.NotSame(t, tb, resp.Body)
			} else {
				assert.Same(t, tb, resp.Body)
			}
		})
	}
}

// timeoutError is a net.Error that timed out, like http.Client's timeout.
type timeoutError struct{}

func (timeoutError) Error() string   { return "timeout awaiting response headers" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// realErrors returns transport errors made by net/http itself, without a
// network: a bad scheme, and a redirect loop.
func realErrors(t *testing.T) (badScheme, tooManyRedirects error) {
	t.Helper()
	req := newRequest(t, t.Context(), "GET", "ftp://files.example/x", nil)
	resp, badScheme := (&http.Transport{}).RoundTrip(req)
	require.Nil(t, resp)
	require.Error(t, badScheme)

	loop := fixtureRT(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 302, Header: hdr("Location", "/again"), Body: http.NoBody, Request: r}, nil
	})
	// The Client returns the last redirect, its body closed, with the error.
	_, tooManyRedirects = (&http.Client{Transport: loop}).Get("https://api.example/start")
	require.Error(t, tooManyRedirects)
	return badScheme, tooManyRedirects
}

func TestDefaultClassifierErrors(t *testing.T) {
	badScheme, tooManyRedirects := realErrors(t)
	uerr := func(err error) error { return &url.Error{Op: "Get", URL: "https://api.example/x", Err: err} }
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	cert := &x509.Certificate{DNSNames: []string{"other.example"}}

	tests := []struct {
		name   string
		err    error
		class  heed.Class
		reason string
	}{
		{"canceled", context.Canceled, heed.Deliver, "canceled"},
		{"canceled in url.Error", uerr(context.Canceled), heed.Deliver, "canceled"},
		{"canceled in dial", uerr(dial(context.Canceled)), heed.Deliver, "canceled"},

		{"nxdomain", uerr(dial(&net.DNSError{Err: "no such host", Name: "nope.example", IsNotFound: true})), heed.Terminal, "host not found"},
		{"nxdomain bare", &net.DNSError{Err: "no such host", Name: "nope.example", IsNotFound: true}, heed.Terminal, "host not found"},
		{"unknown authority", uerr(x509.UnknownAuthorityError{}), heed.Terminal, "tls verification"},
		{"unknown authority pointer", uerr(&x509.UnknownAuthorityError{}), heed.Terminal, "tls verification"},
		{"certificate expired", uerr(x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired, Detail: "current time is after NotAfter"}), heed.Terminal, "tls verification"},
		{"hostname mismatch", uerr(x509.HostnameError{Certificate: cert, Host: "api.example"}), heed.Terminal, "tls verification"},
		{"tls verification error", uerr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{Cert: cert}}), heed.Terminal, "tls verification"},
		{"no system roots", uerr(x509.SystemRootsError{}), heed.Terminal, "tls verification"},
		{"bad scheme from net/http", badScheme, heed.Terminal, "unsupported scheme"},
		{"bad scheme text", uerr(errors.New(`unsupported protocol scheme "ftp"`)), heed.Terminal, "unsupported scheme"},
		{"too many redirects from http.Client", tooManyRedirects, heed.Terminal, "too many redirects"},

		{"dial refused", refuseErr, heed.Transient, "connection refused"},
		{"dial refused in url.Error", uerr(refuseErr), heed.Transient, "connection refused"},
		{"refused bare", &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}, heed.Transient, "connection refused"},
		{"dial unreachable", dial(&os.SyscallError{Syscall: "connect", Err: syscall.EHOSTUNREACH}), heed.Transient, "dial failed"},
		{"dial timeout", uerr(dial(timeoutError{})), heed.Transient, "dial failed"},
		{"dial deadline", dial(os.ErrDeadlineExceeded), heed.Transient, "dial failed"},
		{"dial temporary dns", dial(&net.DNSError{Err: "server misbehaving", Name: "api.example", IsTemporary: true}), heed.Transient, "dial failed"},
		{"proxyconnect", uerr(&net.OpError{Op: "proxyconnect", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ETIMEDOUT}}), heed.Transient, "dial failed"},
		{"temporary dns", &net.DNSError{Err: "server misbehaving", Name: "api.example", IsTemporary: true}, heed.Transient, "dns error"},
		{"dns timeout", uerr(&net.DNSError{Err: "i/o timeout", Name: "api.example", IsTimeout: true}), heed.Transient, "dns error"},

		{"client timeout", uerr(timeoutError{}), heed.Ambiguous, "timeout"},
		{"read deadline", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, heed.Ambiguous, "timeout"},
		{"deadline exceeded not from the request", uerr(context.DeadlineExceeded), heed.Ambiguous, "timeout"},
		{"reset", resetErr, heed.Ambiguous, "connection reset"},
		{"reset in url.Error", uerr(resetErr), heed.Ambiguous, "connection reset"},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}}, heed.Ambiguous, "connection reset"},
		{"aborted", &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNABORTED}}, heed.Ambiguous, "connection reset"},
		{"eof", uerr(io.EOF), heed.Ambiguous, "eof"},
		{"unexpected eof", fmt.Errorf("reading headers: %w", io.ErrUnexpectedEOF), heed.Ambiguous, "eof"},
		{"other", errors.New("http2: stream closed"), heed.Ambiguous, "transport error"},
		{"other op error", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("use of closed network connection")}, heed.Ambiguous, "transport error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(t, t.Context(), "GET", "https://api.example/x", nil)
			v := heed.DefaultClassifier(req, nil, tt.err)
			assert.Equal(t, heed.Verdict{Class: tt.class, Reason: tt.reason}, v, "%v: got %s %q", tt.err, v.Class, v.Reason)
		})
	}
}

// A done request context wins over what the error says.
func TestDefaultClassifierRequestContextDone(t *testing.T) {
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancel2()
	for _, ctx := range []context.Context{canceled, expired} {
		req := newRequest(t, ctx, "GET", "https://api.example/x", nil)
		for _, err := range []error{resetErr, refuseErr, context.DeadlineExceeded, io.EOF, &net.DNSError{IsNotFound: true}} {
			assert.Equal(t, heed.Verdict{Class: heed.Deliver, Reason: "canceled"}, heed.DefaultClassifier(req, nil, err), "%v / %v", ctx.Err(), err)
		}
	}
}

func TestDefaultClassifierSuccessDoesNotAllocate(t *testing.T) {
	req := newRequest(t, t.Context(), "GET", "https://api.example/x", nil)
	resp, _ := classifyResp(200, hdr(
		"Content-Type", ctJSON,
		"X-RateLimit-Remaining", "0",
		"Retry-After", "3",
		"Stripe-Should-Retry", "true",
	), `{"ok":true}`)
	var v heed.Verdict
	allocs := testing.AllocsPerRun(1000, func() {
		v = heed.DefaultClassifier(req, resp, nil)
	})
	assert.Zero(t, allocs)
	assert.Equal(t, heed.Deliver, v.Class)

	plain, _ := classifyResp(204, nil, "")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { v = heed.DefaultClassifier(req, plain, nil) }))
}

func BenchmarkDefaultClassifierSuccess(b *testing.B) {
	req, _ := http.NewRequest("GET", "https://api.example/x", nil)
	resp := &http.Response{StatusCode: 200, Header: hdr("Content-Type", ctJSON), Body: http.NoBody}
	b.ReportAllocs()
	for b.Loop() {
		heed.DefaultClassifier(req, resp, nil)
	}
}

func TestPeekBodyNothingToRead(t *testing.T) {
	got, err := heed.PeekBody(nil, 10)
	assert.NoError(t, err)
	assert.Empty(t, got)

	resp := &http.Response{}
	got, err = heed.PeekBody(resp, 10)
	assert.NoError(t, err)
	assert.Empty(t, got)
	assert.Nil(t, resp.Body)

	resp = &http.Response{Body: http.NoBody}
	got, err = heed.PeekBody(resp, 10)
	assert.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, http.NoBody, resp.Body)

	for _, n := range []int{0, -1} {
		r, tb := classifyResp(200, nil, "hello")
		got, err = heed.PeekBody(r, n)
		assert.NoError(t, err)
		assert.Empty(t, got)
		assert.Same(t, tb, r.Body, "n=%d leaves the body as it is", n)
	}
}

func TestPeekBodyLeavesBodyWhole(t *testing.T) {
	tests := []struct {
		name string
		body string
		n    int
		want string
	}{
		{"empty", "", 8, ""},
		{"shorter than n", "hello", 8, "hello"},
		{"exactly n", "hello", 5, "hello"},
		{"longer than n", "hello, world", 5, "hello"},
		{"one byte", "hello", 1, "h"},
		{"large n", "hello", 1 << 30, "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, tb := classifyResp(200, nil, tt.body)
			got, err := heed.PeekBody(resp, tt.n)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.Zero(t, tb.closes(), "peeking does not close")
			assert.Equal(t, tt.body, readBody(t, resp))
			assert.Equal(t, 1, tb.closes(), "Close closes the original")
		})
	}
}

// A reader that returns one byte per Read still yields n bytes.
func TestPeekBodyReadsUpToN(t *testing.T) {
	resp := &http.Response{Body: io.NopCloser(iotest.OneByteReader(strings.NewReader("abcdefgh")))}
	got, err := heed.PeekBody(resp, 5)
	require.NoError(t, err)
	assert.Equal(t, "abcde", string(got))
	all, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "abcdefgh", string(all))
}

func TestPeekBodyTwice(t *testing.T) {
	resp, tb := classifyResp(429, nil, "0123456789")
	a, err := heed.PeekBody(resp, 4)
	require.NoError(t, err)
	b, err := heed.PeekBody(resp, 6)
	require.NoError(t, err)
	assert.Equal(t, "0123", string(a))
	assert.Equal(t, "012345", string(b))
	assert.Equal(t, "0123456789", readBody(t, resp))
	assert.Equal(t, 1, tb.closes())
}

func TestPeekBodyReadError(t *testing.T) {
	boom := errors.New("boom")
	resp := &http.Response{Body: io.NopCloser(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)))}
	got, err := heed.PeekBody(resp, 10)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, "abc", string(got))
	// The caller still gets the bytes read, then the error.
	all, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, "abc", string(all))
}

// countingRT counts the requests handed to next.
type countingRT struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    int
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// TestInvalidRequestIsTerminal: a request that net/http refuses to send
// fails the same way on every attempt, with nothing sent, so it is Terminal
// and tried once, through http.Client too. The errors are net/http's own,
// made by a real Transport that never dials (127.0.0.1:1 would refuse).
func TestInvalidRequestIsTerminal(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) *http.Request
	}{
		{"header value with a newline", func(t *testing.T) *http.Request {
			r := newRequest(t, t.Context(), "GET", "http://127.0.0.1:1/v1/x", nil)
			r.Header.Set("X-Token", "a\nb")
			return r
		}},
		{"header value with a NUL", func(t *testing.T) *http.Request {
			r := newRequest(t, t.Context(), "PUT", "http://127.0.0.1:1/v1/x", strings.NewReader("x"))
			r.Header["X-Token"] = []string{"a\x00b"}
			return r
		}},
		{"header name with a space", func(t *testing.T) *http.Request {
			r := newRequest(t, t.Context(), "GET", "http://127.0.0.1:1/v1/x", nil)
			r.Header["Bad Name"] = []string{"v"}
			return r
		}},
		{"trailer name", func(t *testing.T) *http.Request {
			r := newRequest(t, t.Context(), "POST", "http://127.0.0.1:1/v1/x", strings.NewReader("x"))
			r.Header.Set("Idempotency-Key", "k")
			r.Trailer = http.Header{"Bad:Name": {"v"}}
			return r
		}},
		{"method", func(t *testing.T) *http.Request {
			r := newRequest(t, t.Context(), "GET", "http://127.0.0.1:1/v1/x", nil)
			r.Method = "GET X"
			return r
		}},
		{"no host", func(t *testing.T) *http.Request {
			r := newRequest(t, t.Context(), "GET", "http://127.0.0.1:1/v1/x", nil)
			r.URL.Host, r.Host = "", ""
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.build(t)
			_, raw := (&http.Transport{}).RoundTrip(req.Clone(t.Context()))
			require.Error(t, raw)
			assert.Equal(t, heed.Verdict{Class: heed.Terminal, Reason: "invalid request"}, heed.DefaultClassifier(req, nil, raw), "%v", raw)
			wrapped := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/v1/x", Err: raw}
			assert.Equal(t, heed.Terminal, heed.DefaultClassifier(req, nil, wrapped).Class, "%v", wrapped)

			inner := &countingRT{next: &http.Transport{}}
			tr := heed.New(inner, heed.WithPolicy(heed.Policy{RetryUnsafe: true}))
			resp, err := tr.RoundTrip(req)
			require.Error(t, err)
			assert.Nil(t, resp)
			assert.Equal(t, raw.Error(), err.Error(), "the error is handed back as it is")
			assert.Equal(t, 1, inner.n, "tried once")
		})
	}
	// Errors that merely mention such text are not taken for them.
	for _, msg := range []string{"read: xnet/http: invalid header", "proxy said net/http:invalid method"} {
		assert.Equal(t, heed.Ambiguous, heed.DefaultClassifier(nil, nil, errors.New(msg)).Class, msg)
	}
}

// TestInvalidRequestOverHTTP2: net/http's HTTP/2 transport refuses the same
// requests with errors of its own ("http2: invalid ..."), which are
// Terminal as well; made by a real HTTP/2 client against a loopback server
// that never sees them.
func TestInvalidRequestOverHTTP2(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	tests := []struct {
		name string
		set  func(r *http.Request)
	}{
		{"Host", func(r *http.Request) { r.Host = "bad host" }},
		{"Connection", func(r *http.Request) { r.Header.Set("Connection", "x-custom") }},
		{"Upgrade", func(r *http.Request) { r.Header.Set("Upgrade", "websocket") }},
		{"Transfer-Encoding", func(r *http.Request) { r.Header.Set("Transfer-Encoding", "gzip") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &countingRT{next: srv.Client().Transport}
			req := newRequest(t, t.Context(), "GET", srv.URL+"/v1/x", nil)
			tt.set(req)
			resp, err := heed.New(inner).RoundTrip(req)
			require.Error(t, err)
			assert.Nil(t, resp)
			assert.Equal(t, heed.Verdict{Class: heed.Terminal, Reason: "invalid request"}, heed.DefaultClassifier(req, nil, err), "%v", err)
			assert.Equal(t, 1, inner.n, "tried once")
		})
	}
	// The same checks, from net/http's ClientConn and the HTTP/2 transport,
	// as their texts begin.
	for _, msg := range []string{`http: invalid header field value for "X"`, `http: invalid method "GET X"`, `http2: invalid request :path "x"`, `http2: invalid HTTP header field value for "X"`} {
		assert.Equal(t, heed.Terminal, heed.DefaultClassifier(nil, nil, &url.Error{Op: "Get", URL: "https://api.example/", Err: errors.New(msg)}).Class, msg)
	}
	assert.Zero(t, hits.Load(), "the server saw none of them")
}

// TestServerTextIsNoInvalidRequest: a server whose malformed answer quotes
// the words of an invalid request is not taken for one: the request was
// sent, and a GET is retried.
func TestServerTextIsNoInvalidRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 4096))
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nupstream sent invalid HTTP header x\r\nnet/http: invalid header y\r\n\r\n")
			}()
		}
	}()
	req := newRequest(t, t.Context(), "GET", "http://"+ln.Addr().String()+"/v1/x", nil)
	inner := &http.Transport{}
	defer inner.CloseIdleConnections()
	_, raw := inner.RoundTrip(req.Clone(t.Context()))
	require.Error(t, raw)
	assert.Equal(t, heed.Ambiguous, heed.DefaultClassifier(req, nil, raw).Class, "%v", raw)

	tr := heed.New(inner, heed.WithPolicy(heed.Policy{MaxAttempts: 3, Backoff: heed.Constant(time.Millisecond)}))
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, int32(4), conns.Load(), "one probe, then three attempts")
}

// 409 on a request carrying an idempotency key is Transient, the policy's
// KeyHeader included.
func TestDesign409WithKeyHeaderIsTransient(t *testing.T) {
	tests := []struct {
		name string
		set  string // header the caller sets; "" lets heed add the key
	}{
		{"Idempotency-Key", "Idempotency-Key"},
		{"KeyHeader set by the caller", "X-Request-Key"},
		{"KeyHeader added by heed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(reply{status: 409, body: "in progress"}, ok200)
				req := newRequest(t, t.Context(), "POST", "https://api.example/", nil)
				if tt.set != "" {
					req.Header.Set(tt.set, "k-1")
				}
				resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{KeyHeader: "X-Request-Key"}))).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, 200, resp.StatusCode)
				assert.Len(t, rt.requests(), 2)
			})
		})
	}
}

// Every vendor rule of "Default classes" has a fixture in httptest_fixtures
// that shows it.
func TestDesignVendorRulesHaveFixtures(t *testing.T) {
	type fixture struct {
		name string
		resp *http.Response
		body string
		v    heed.Verdict
	}
	var all []fixture
	for _, name := range fixtureNames(t) {
		tc, ok := fixtureCases[name]
		require.True(t, ok, name)
		resp := loadFixture(t, name)
		v := fixtureClassify(name, tc.request(t, t.Context()), resp)
		all = append(all, fixture{name, resp, readBody(t, resp), v})
	}
	h := func(f fixture, k string) string { return f.resp.Header.Get(k) }
	rules := []struct {
		name  string
		shows func(f fixture) bool
	}{
		{"OpenAI insufficient_quota: Terminal", func(f fixture) bool {
			return f.resp.StatusCode == 429 && strings.Contains(f.body, "insufficient_quota") && f.v.Class == heed.Terminal
		}},
		{"problem type quota-exceeded with no reset: Terminal", func(f fixture) bool {
			return f.resp.StatusCode == 429 && strings.Contains(f.body, "quota-exceeded") && f.v.Class == heed.Terminal
		}},
		{"problem type quota-exceeded with a reset: Throttled", func(f fixture) bool {
			return f.resp.StatusCode == 429 && strings.Contains(f.body, "quota-exceeded") && f.v.Class == heed.Throttled
		}},
		{"529 overloaded: Throttled", func(f fixture) bool { return f.resp.StatusCode == 529 && f.v.Class == heed.Throttled }},
		{"403 with Retry-After: Throttled", func(f fixture) bool {
			return f.resp.StatusCode == 403 && h(f, "Retry-After") != "" && f.v.Class == heed.Throttled
		}},
		{"403 with X-RateLimit-Remaining: 0 (GitHub): Throttled", func(f fixture) bool {
			return f.resp.StatusCode == 403 && h(f, "Retry-After") == "" && h(f, "X-RateLimit-Remaining") == "0" && f.v.Class == heed.Throttled
		}},
		{"409 with an idempotency key: Transient", func(f fixture) bool { return f.resp.StatusCode == 409 && f.v.Class == heed.Transient }},
		{"Stripe-Should-Retry: false: Terminal", func(f fixture) bool {
			return strings.EqualFold(h(f, "Stripe-Should-Retry"), "false") && f.v.Class == heed.Terminal
		}},
		{"should-retry: true makes a failure Transient", func(f fixture) bool {
			return (strings.EqualFold(h(f, "Stripe-Should-Retry"), "true") || strings.EqualFold(h(f, "X-Should-Retry"), "true")) && f.v.Class == heed.Transient
		}},
		{"Google RetryInfo in the body: Throttled, with its wait", func(f fixture) bool {
			return f.resp.StatusCode == 429 && strings.Contains(f.body, "google.rpc.RetryInfo") && f.v.Class == heed.Throttled && f.v.Source == "RetryInfo" && f.v.Wait > 0
		}},
		{"Google per-day quota: Terminal", func(f fixture) bool {
			return f.resp.StatusCode == 429 && strings.Contains(f.body, "PerDay") && f.v.Class == heed.Terminal && f.v.Reason == "quota"
		}},
		{"Discord retry_after in the body: Throttled, with its wait", func(f fixture) bool {
			return f.resp.StatusCode == 429 && strings.Contains(f.body, `"retry_after"`) && f.v.Class == heed.Throttled && f.v.Source == "retry_after"
		}},
		{"AWS throttle on a 400 (JSON __type): Throttled", func(f fixture) bool {
			return f.resp.StatusCode == 400 && strings.Contains(f.body, `"__type"`) && f.v.Class == heed.Throttled
		}},
		{"AWS throttle on a 400 (XML <Code>): Throttled", func(f fixture) bool {
			return f.resp.StatusCode == 400 && strings.Contains(f.body, "<Code>") && f.v.Class == heed.Throttled
		}},
		{"GitHub secondary limit without retry-after: Throttled, a minute", func(f fixture) bool {
			return f.resp.StatusCode == 403 && strings.Contains(f.body, "secondary rate limit") && h(f, "Retry-After") == "" && f.v.Wait == time.Minute
		}},
		{"Salesforce REQUEST_LIMIT_EXCEEDED, 24-hour total: Terminal", func(f fixture) bool {
			return strings.Contains(f.body, "REQUEST_LIMIT_EXCEEDED") && f.v.Class == heed.Terminal && f.v.Reason == "quota"
		}},
		{"a spent token dimension, no retry-after (OpenAI): Throttled", func(f fixture) bool {
			return f.resp.StatusCode == 429 && h(f, "X-Ratelimit-Remaining-Tokens") == "0" && h(f, "Retry-After") == "" && f.v.Class == heed.Throttled
		}},
		{"a spent dimension on a served response (Anthropic): delivered", func(f fixture) bool {
			return f.resp.StatusCode == 200 && h(f, "Anthropic-Ratelimit-Output-Tokens-Remaining") == "0" && f.v.Class == heed.Deliver
		}},
		{"a GraphQL throttle on a 200 (Shopify THROTTLED, GitHub RATE_LIMITED): Throttled", func(f fixture) bool {
			return f.resp.StatusCode == 200 && (strings.Contains(f.body, "THROTTLED") || strings.Contains(f.body, "RATE_LIMITED")) && f.v.Class == heed.Throttled
		}},
		{"a stream that opens with an error: its non-stream class", func(f fixture) bool {
			return f.resp.StatusCode == 200 && strings.HasPrefix(h(f, "Content-Type"), "text/event-stream") && f.v.Class == heed.Throttled
		}},
		{"any other AWS 400: Terminal", func(f fixture) bool {
			return f.resp.StatusCode == 400 && strings.Contains(f.body, `"__type"`) && f.v.Class == heed.Terminal
		}},
		{"x-should-retry: false: Terminal", func(f fixture) bool {
			return strings.EqualFold(h(f, "X-Should-Retry"), "false") && f.v.Class == heed.Terminal
		}},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			var hits []string
			for _, f := range all {
				if r.shows(f) {
					hits = append(hits, f.name)
				}
			}
			assert.NotEmpty(t, hits)
		})
	}
}
