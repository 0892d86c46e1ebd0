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
	Deliver   Class = iota // hand the response or error to the caller as it is
	Terminal               // no wait fixes it (auth, billing, quota, validation): never retry
	Throttled              // refused for now, not processed: wait for the hint, resend whatever the method
	Transient              // failed before the server processed it (dial refused, 408, 425): resend
	Ambiguous              // the server may have processed it (timeout, reset, 5xx): resend only if replay-safe
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
// such as "rate limited". A Wait found where no header says it (a body)
// counts as a header hint by every rule of one (the longer wins, MinWait,
// the hold, the deferral), for a class that retries.
type Verdict struct {
	Class  Class
	Reason string
	Wait   time.Duration // the server's wait, counted from the response
	Source string        // where Wait came from, such as "RetryInfo"; "": no wait given
}

// wait returns the wait v gives, if it gives one.
func (v Verdict) wait() (time.Duration, string, bool) {
	if v.Source == "" || v.Wait < 0 {
		return 0, "", false
	}
	return v.Wait, v.Source, true
}

// Classifier decides what a response or transport error means. Exactly one
// of resp and err is non-nil. A Classifier may read the body with PeekBody
// but must leave it whole for the caller.
type Classifier func(req *http.Request, resp *http.Response, err error) Verdict

// classifyPeekLimit is the most DefaultClassifier reads of a response body.
const classifyPeekLimit = 4 << 10

// DefaultClassifier classifies a response or transport error as below; its
// Reason strings are stable. Responses go by status, then the "should
// retry" headers override (false wins a disagreement):
//
//	status                                                    class      reason
//	1xx, 2xx, 3xx                                             Deliver    "ok"
//	429                                                       Throttled  "rate limited"
//	429, JSON error code or type insufficient_quota (OpenAI)  Terminal   "billing"
//	429, problem+json type ending "quota-exceeded", no Hint   Terminal   "quota"
//	429, a Google QuotaFailure or ErrorInfo of a PerDay quota Terminal   "quota"
//	429, JSON Google RetryInfo or Discord retry_after: Wait   Throttled  "rate limited"
//	403 with Retry-After or X-RateLimit-Remaining: 0          Throttled  "rate limited"
//	403 or 429, JSON saying "secondary rate limit" or "abuse
//	     detection" (GitHub): without those headers, a minute Throttled  "rate limited"
//	403, Salesforce REQUEST_LIMIT_EXCEEDED: Concurrent...;
//	     the 24-hour total                                    Throttled; Terminal  "rate limited"; "quota"
//	other 403; 401; 402; 404                                  Terminal   "forbidden"; "unauthorized"; "billing"; "not found"
//	408; 425                                                  Transient  "request timeout"; "too early"
//	409, request has Idempotency-Key or X-Idempotency-Key     Transient  "in progress"
//	400 naming an AWS SDK throttle code (awsthrottle.go)      Throttled  "rate limited"
//	422; other 4xx                                            Terminal   "unprocessable"; "client error"
//	501; 505                                                  Terminal   "not implemented"; "version not supported"
//	503; 503 with XML <Code>SlowDown</Code> (AWS S3)          Throttled  "unavailable"; "slow down"
//	529 (overloaded: Anthropic and others)                    Throttled  "overloaded"
//	500, 502, 504, every other 5xx                            Ambiguous  "server error"
//	Stripe-Should-Retry or x-should-retry: false              Terminal   "should not retry"
//	     true, on a status ≥ 400 classed Throttled            Throttled  (reason kept)
//	     true, on any other status ≥ 400                      Transient  "should retry"
//
// A body is peeked (PeekBody, 4 KiB, left whole) only for a 429 or 403 that
// may be JSON, a JSON or XML 400, and an XML 503 (docs/classification.md);
// never on success, which does not allocate. Transport errors, first match
// wins:
//
//	error                                                     class      reason
//	the request's context done, or context.Canceled           Deliver    "canceled"
//	*net.DNSError with IsNotFound                             Terminal   "host not found"
//	x509 Unknown Authority, CertificateInvalid, Hostname or
//	     SystemRoots error, *tls.CertificateVerificationError Terminal   "tls verification"
//	"unsupported protocol scheme"                             Terminal   "unsupported scheme"
//	a request net/http refuses to send (bad header, URL...)   Terminal   "invalid request"
//	"stopped after N redirects"                               Terminal   "too many redirects"
//	ECONNREFUSED                                              Transient  "connection refused"
//	*net.OpError "dial" or "proxyconnect", timeouts included  Transient  "dial failed"
//	any other *net.DNSError                                   Transient  "dns error"
//	a net.Error timeout; DeadlineExceeded not the request's   Ambiguous  "timeout"
//	ECONNRESET, ECONNABORTED, EPIPE                           Ambiguous  "connection reset"
//	io.EOF, io.ErrUnexpectedEOF                               Ambiguous  "eof"
//	anything else, or no response and no error               Ambiguous  "transport error"
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
	return classifyMarked(req, resp, err, keyHeader, markShouldRetry) // read the fields, whether there or not
}

// classifyMarked is classify of a response whose header's marks are m:
// without markShouldRetry, it reads no should-retry field.
func classifyMarked(req *http.Request, resp *http.Response, err error, keyHeader string, m marks) Verdict {
	if err != nil {
		return classifyError(req, err)
	}
	if resp == nil {
		return Verdict{Class: Ambiguous, Reason: "transport error"}
	}
	should := shouldRetryUnset
	if m&markShouldRetry != 0 {
		should = shouldRetry(resp.Header)
	}
	switch should {
	case shouldRetryNo:
		return Verdict{Class: Terminal, Reason: "should not retry"}
	case shouldRetryYes:
		if resp.StatusCode >= 400 {
			v := classifyStatus(req, resp, keyHeader)
			if v.Class == Throttled {
				return v
			}
			return Verdict{Class: Transient, Reason: "should retry", Wait: v.Wait, Source: v.Source}
		}
	}
	return classifyStatus(req, resp, keyHeader)
}

// delivered is the verdict on a response below 400 that says nothing of
// retrying.
var delivered = Verdict{Class: Deliver, Reason: "ok"}

// classifyStatus classifies a response by its status, headers and, for a
// few statuses, the start of its body.
func classifyStatus(req *http.Request, resp *http.Response, keyHeader string) Verdict {
	code := resp.StatusCode
	switch {
	case code < 400:
		return delivered
	case code == http.StatusTooManyRequests:
		return classify429(resp)
	case code == http.StatusForbidden:
		return classify403(resp)
	case code == http.StatusUnauthorized:
		return Verdict{Class: Terminal, Reason: "unauthorized"}
	case code == http.StatusPaymentRequired:
		return Verdict{Class: Terminal, Reason: "billing"}
	case code == http.StatusNotFound:
		return Verdict{Class: Terminal, Reason: "not found"}
	case code == http.StatusRequestTimeout:
		return Verdict{Class: Transient, Reason: "request timeout"}
	case code == http.StatusConflict && hasIdempotencyKey(req, keyHeader):
		return Verdict{Class: Transient, Reason: "in progress"}
	case code == http.StatusUnprocessableEntity:
		return Verdict{Class: Terminal, Reason: "unprocessable"}
	case code == http.StatusTooEarly:
		return Verdict{Class: Transient, Reason: "too early"}
	case code == http.StatusBadRequest && awsThrottled(resp):
		return Verdict{Class: Throttled, Reason: "rate limited"}
	case code < 500:
		return Verdict{Class: Terminal, Reason: "client error"}
	case code == http.StatusNotImplemented:
		return Verdict{Class: Terminal, Reason: "not implemented"}
	case code == http.StatusServiceUnavailable:
		if s3SlowDown(resp) {
			return Verdict{Class: Throttled, Reason: "slow down"}
		}
		return Verdict{Class: Throttled, Reason: "unavailable"}
	case code == http.StatusHTTPVersionNotSupported:
		return Verdict{Class: Terminal, Reason: "version not supported"}
	case code == 529:
		return Verdict{Class: Throttled, Reason: "overloaded"}
	}
	return Verdict{Class: Ambiguous, Reason: "server error"}
}

// classify429 tells a rate limit from an exhausted quota or balance, and
// reads the wait a JSON body gives (bodyhint.go).
func classify429(resp *http.Response) Verdict {
	if b, ok := peekJSONBody(resp); ok {
		switch bodyQuotaSignal(b) {
		case bodyQuotaBilling:
			return Verdict{Class: Terminal, Reason: "billing"}
		case bodyQuotaProblem:
			if _, _, ok := Hint(resp, time.Now()); !ok {
				return Verdict{Class: Terminal, Reason: "quota"}
			}
		}
		h := readBodyHint(b)
		if h.perDay {
			// The wait the body gives is kept, for a "should retry: true"
			// that overrides the class.
			return Verdict{Class: Terminal, Reason: "quota", Wait: h.wait, Source: h.source}
		}
		if h.source != "" {
			return Verdict{Class: Throttled, Reason: "rate limited", Wait: h.wait, Source: h.source}
		}
		if githubSecondary(b) && len(resp.Header["Retry-After"]) == 0 && !githubExhausted(resp.Header) {
			return Verdict{Class: Throttled, Reason: "rate limited", Wait: githubSecondaryWait, Source: sourceGitHubSecondary}
		}
	}
	return Verdict{Class: Throttled, Reason: "rate limited"}
}

// s3SlowDown reports whether a 503 is AWS S3's SlowDown error.
func s3SlowDown(resp *http.Response) bool {
	if !strings.Contains(respContentType(resp), "xml") {
		return false
	}
	b, _ := peekWithin(resp, classifyPeekLimit, classifyPeekTime)
	return awsXMLCode(b) == "SlowDown"
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
	v, _ := memberInText(b, `"type"`, true)
	return v
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
