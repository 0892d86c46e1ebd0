// Classification: what a response or transport error means for retrying,
// and the default Classifier.

package heed

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Class is what a response or transport error means for retrying.
type Class uint8

const (
	// Deliver hands the response or error to the caller as it is.
	Deliver Class = iota
	// Terminal means no wait fixes it (auth, billing, quota, validation):
	// deliver, never retry.
	Terminal
	// Throttled means the server refused for now and did not process the
	// request: wait for its hint, then resend, whatever the method.
	Throttled
	// Transient means the request failed before the server processed it
	// (dial refused, 408, 425): safe to resend, whatever the method.
	Transient
	// Ambiguous means the server may have processed the request (timeout,
	// reset, 500/502/504): resend only if the request is replay-safe.
	Ambiguous
)

// String returns the class name in lower case, as logged.
func (c Class) String() string {
	switch c {
	case Deliver:
		return "deliver"
	case Terminal:
		return "terminal"
	case Throttled:
		return "throttled"
	case Transient:
		return "transient"
	case Ambiguous:
		return "ambiguous"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Verdict is a Classifier's decision: the Class and a short, stable Reason
// such as "rate limited" or "billing".
type Verdict struct {
	Class  Class
	Reason string
}

// Classifier decides what a response or transport error means. Exactly one
// of resp and err is non-nil. A Classifier may read the body with PeekBody
// but must leave it whole for the caller.
type Classifier func(req *http.Request, resp *http.Response, err error) Verdict

// classifyPeekLimit is the most DefaultClassifier reads of a response body.
const classifyPeekLimit = 4 << 10

// DefaultClassifier classifies a response or transport error as below. The
// Reason strings are stable: match on them if you must.
//
// Responses are classified by status, then the two "should retry" headers
// override the result:
//
//	status                                     class      reason
//	1xx, 2xx, 3xx                              Deliver    "ok"
//	429                                        Throttled  "rate limited"
//	429, JSON body with OpenAI insufficient_quota
//	     in error.code or error.type (or, when
//	     the JSON is cut short, anywhere)      Terminal   "billing"
//	429, problem+json "type" ending in
//	     "quota-exceeded", and no valid Hint   Terminal   "quota"
//	403 with Retry-After, or
//	     X-RateLimit-Remaining: 0 (GitHub)     Throttled  "rate limited"
//	403, JSON body saying "secondary rate
//	     limit" or "abuse detection" (GitHub)  Throttled  "rate limited"
//	other 403                                  Terminal   "forbidden"
//	401                                        Terminal   "unauthorized"
//	402                                        Terminal   "billing"
//	404                                        Terminal   "not found"
//	408                                        Transient  "request timeout"
//	409, request has Idempotency-Key or
//	     X-Idempotency-Key                     Transient  "in progress"
//	422                                        Terminal   "unprocessable"
//	425                                        Transient  "too early"
//	other 4xx (409 without a key included)     Terminal   "client error"
//	501                                        Terminal   "not implemented"
//	503                                        Throttled  "unavailable"
//	503, XML body with <Code>SlowDown</Code>
//	     (AWS S3)                              Throttled  "slow down"
//	505                                        Terminal   "version not supported"
//	529 (Anthropic and others: overloaded)     Throttled  "overloaded"
//	500, 502, 504, every other status ≥ 500    Ambiguous  "server error"
//
//	Stripe-Should-Retry or x-should-retry:
//	     false, any status                     Terminal   "should not retry"
//	     true, status ≥ 400 classed Throttled  Throttled  (reason kept: the
//	                                                       server's hint still applies)
//	     true, any other status ≥ 400          Transient  "should retry"
//
// When the two headers disagree, false wins. A body is read (with PeekBody,
// at most 4 KiB, left whole for the caller) only for 429 and 403 when it may
// be JSON (a JSON or problem+json Content-Type, or none or text/plain and a
// body starting with '{'), and for 503 with an XML Content-Type; never on
// success, which does not allocate.
//
// Transport errors are tested in this order, the first match wins:
//
//	error                                      class      reason
//	the request's context is done, or
//	     errors.Is(err, context.Canceled)      Deliver    "canceled"
//	*net.DNSError with IsNotFound (NXDOMAIN)   Terminal   "host not found"
//	TLS verification: x509.UnknownAuthorityError,
//	     x509.CertificateInvalidError,
//	     x509.HostnameError, x509.SystemRootsError,
//	     *tls.CertificateVerificationError     Terminal   "tls verification"
//	"unsupported protocol scheme" (net/http)   Terminal   "unsupported scheme"
//	a request net/http refuses to send: an
//	     invalid header, trailer, method or
//	     Host, a control character in the URL,
//	     no Host or URL                         Terminal   "invalid request"
//	"stopped after N redirects" (http.Client)  Terminal   "too many redirects"
//	ECONNREFUSED                               Transient  "connection refused"
//	*net.OpError with Op "dial" or
//	     "proxyconnect" (never reached the
//	     server; a dial timeout included)      Transient  "dial failed"
//	any other *net.DNSError (temporary)        Transient  "dns error"
//	timeout: a net.Error whose Timeout() is
//	     true, or context.DeadlineExceeded
//	     not from the request's own context    Ambiguous  "timeout"
//	ECONNRESET, ECONNABORTED, EPIPE            Ambiguous  "connection reset"
//	io.EOF, io.ErrUnexpectedEOF                Ambiguous  "eof"
//	anything else                              Ambiguous  "transport error"
//
// A nil response with a nil error is Ambiguous "transport error".
func DefaultClassifier(req *http.Request, resp *http.Response, err error) Verdict {
	return classify(req, resp, err, "")
}

// keyedClassifier is DefaultClassifier for a policy whose KeyHeader names
// one more idempotency-key header, for the 409 rule.
func keyedClassifier(keyHeader string) Classifier {
	return func(req *http.Request, resp *http.Response, err error) Verdict {
		return classify(req, resp, err, keyHeader)
	}
}

// classify is DefaultClassifier, with keyHeader as one more name of an
// idempotency-key header ("" for none).
func classify(req *http.Request, resp *http.Response, err error, keyHeader string) Verdict {
	if err != nil {
		return classifyError(req, err)
	}
	if resp == nil {
		return Verdict{Ambiguous, "transport error"}
	}
	switch shouldRetry(resp.Header) {
	case shouldRetryNo:
		return Verdict{Terminal, "should not retry"}
	case shouldRetryYes:
		if resp.StatusCode >= 400 {
			if v := classifyStatus(req, resp, keyHeader); v.Class == Throttled {
				return v
			}
			return Verdict{Transient, "should retry"}
		}
	}
	return classifyStatus(req, resp, keyHeader)
}

// classifyStatus classifies a response by its status, headers and, for a
// few statuses, the start of its body.
func classifyStatus(req *http.Request, resp *http.Response, keyHeader string) Verdict {
	code := resp.StatusCode
	switch {
	case code < 400:
		return Verdict{Deliver, "ok"}
	case code == http.StatusTooManyRequests:
		return classify429(resp)
	case code == http.StatusForbidden:
		if rateLimited403(resp) {
			return Verdict{Throttled, "rate limited"}
		}
		return Verdict{Terminal, "forbidden"}
	case code == http.StatusUnauthorized:
		return Verdict{Terminal, "unauthorized"}
	case code == http.StatusPaymentRequired:
		return Verdict{Terminal, "billing"}
	case code == http.StatusNotFound:
		return Verdict{Terminal, "not found"}
	case code == http.StatusRequestTimeout:
		return Verdict{Transient, "request timeout"}
	case code == http.StatusConflict && hasIdempotencyKey(req, keyHeader):
		return Verdict{Transient, "in progress"}
	case code == http.StatusUnprocessableEntity:
		return Verdict{Terminal, "unprocessable"}
	case code == http.StatusTooEarly:
		return Verdict{Transient, "too early"}
	case code < 500:
		return Verdict{Terminal, "client error"}
	case code == http.StatusNotImplemented:
		return Verdict{Terminal, "not implemented"}
	case code == http.StatusServiceUnavailable:
		if s3SlowDown(resp) {
			return Verdict{Throttled, "slow down"}
		}
		return Verdict{Throttled, "unavailable"}
	case code == http.StatusHTTPVersionNotSupported:
		return Verdict{Terminal, "version not supported"}
	case code == 529:
		return Verdict{Throttled, "overloaded"}
	}
	return Verdict{Ambiguous, "server error"}
}

// classify429 tells a rate limit from an exhausted quota or balance.
func classify429(resp *http.Response) Verdict {
	if b, ok := peekJSONBody(resp); ok {
		switch bodyQuotaSignal(b) {
		case bodyQuotaBilling:
			return Verdict{Terminal, "billing"}
		case bodyQuotaProblem:
			if _, _, ok := Hint(resp, time.Now()); !ok {
				return Verdict{Terminal, "quota"}
			}
		}
	}
	return Verdict{Throttled, "rate limited"}
}

// rateLimited403 reports whether a 403 is a rate limit rather than a
// refusal: GitHub answers its primary limit with X-RateLimit-Remaining: 0,
// and its secondary limit with Retry-After or a message saying so.
func rateLimited403(resp *http.Response) bool {
	h := resp.Header
	if len(h["Retry-After"]) > 0 {
		return true
	}
	if v := h["X-Ratelimit-Remaining"]; len(v) > 0 && strings.TrimSpace(v[0]) == "0" {
		return true
	}
	if b, ok := peekJSONBody(resp); ok {
		return bytes.Contains(b, []byte("secondary rate limit")) || bytes.Contains(b, []byte("abuse detection"))
	}
	return false
}

// s3SlowDown reports whether a 503 is AWS S3's SlowDown error.
func s3SlowDown(resp *http.Response) bool {
	if !strings.Contains(respContentType(resp), "xml") {
		return false
	}
	b, _ := peekWithin(resp, classifyPeekLimit, classifyPeekTime)
	return bytes.Contains(b, []byte("<Code>SlowDown</Code>"))
}

func respContentType(resp *http.Response) string {
	// A media type with its parameters fits well within 256 bytes; a
	// longer value is no content type, and is not copied.
	if v := resp.Header["Content-Type"]; len(v) > 0 && len(v[0]) <= 256 {
		return strings.ToLower(v[0])
	}
	return ""
}

// peekJSON peeks at the start of a body that may be JSON, and reports
// whether it is.
func peekJSONBody(resp *http.Response) ([]byte, bool) {
	ct := respContentType(resp)
	declared := strings.Contains(ct, "json")
	if !declared && ct != "" && !strings.HasPrefix(ct, "text/plain") {
		return nil, false
	}
	b, _ := peekWithin(resp, classifyPeekLimit, classifyPeekTime)
	if declared {
		return b, len(b) > 0
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	return b, len(t) > 0 && t[0] == '{'
}

type bodyQuota uint8

const (
	bodyQuotaNone    bodyQuota = iota
	bodyQuotaBilling           // OpenAI insufficient_quota: the balance ran out
	bodyQuotaProblem           // a problem+json type ending in quota-exceeded
)

// bodyQuotaSignal reads the peeked start of a JSON error body. A body cut short
// (by the peek limit or the server) is searched for the markers as text.
func bodyQuotaSignal(b []byte) bodyQuota {
	var doc struct {
		Error any `json:"error"`
		Type  any `json:"type"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		var syn *json.SyntaxError
		if !errors.As(err, &syn) {
			return bodyQuotaNone
		}
		if bytes.Contains(b, []byte("insufficient_quota")) {
			return bodyQuotaBilling
		}
		if strings.HasSuffix(problemTypeInText(b), "quota-exceeded") {
			return bodyQuotaProblem
		}
		return bodyQuotaNone
	}
	switch e := doc.Error.(type) {
	case string:
		if e == "insufficient_quota" {
			return bodyQuotaBilling
		}
	case map[string]any:
		if e["code"] == "insufficient_quota" || e["type"] == "insufficient_quota" {
			return bodyQuotaBilling
		}
	}
	if t, ok := doc.Type.(string); ok && strings.HasSuffix(t, "quota-exceeded") {
		return bodyQuotaProblem
	}
	return bodyQuotaNone
}

// problemTypeInText returns the string value of the first "type" member in
// JSON text that may be cut short, or "".
func problemTypeInText(b []byte) string {
	for {
		i := bytes.Index(b, []byte(`"type"`))
		if i < 0 {
			return ""
		}
		b = b[i+len(`"type"`):]
		rest := bytes.TrimLeft(b, " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		if len(rest) == 0 || rest[0] != '"' {
			continue
		}
		rest = rest[1:]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			return string(rest[:j])
		}
		return ""
	}
}

type shouldRetryHeader uint8

const (
	shouldRetryUnset shouldRetryHeader = iota
	shouldRetryYes
	shouldRetryNo
)

// shouldRetry reads Stripe-Should-Retry and x-should-retry; false wins.
func shouldRetry(h http.Header) shouldRetryHeader {
	r := shouldRetryUnset
	for _, k := range [...]string{"Stripe-Should-Retry", "X-Should-Retry"} {
		for _, v := range h[k] {
			v = strings.TrimSpace(v)
			switch {
			case strings.EqualFold(v, "false"):
				return shouldRetryNo
			case strings.EqualFold(v, "true"):
				r = shouldRetryYes
			}
		}
	}
	return r
}

// hasIdempotencyKey reports whether req carries an idempotency key.
func hasIdempotencyKey(req *http.Request, keyHeader string) bool {
	if req == nil {
		return false
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != "" ||
		(keyHeader != "" && req.Header.Get(keyHeader) != "")
}
