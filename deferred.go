// Deferral: the error RoundTrip returns at once when the wait the server
// asks for does not fit the caller's time.

package heed

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/rules"
	"go.uber.org/zap/zapcore"
)

// ErrDeferred is the error that every *DeferredError matches with errors.Is.
var ErrDeferred = errors.New("heed: deferred")

// DeferredError is returned by RoundTrip, at once, when a wait (the
// server's, a gate's or a backoff) cannot fit the caller's remaining time
// or exceeds Policy.MaxWait. heed never waits less than asked instead: a
// worker should persist RetryAt with the job and not try before it.
type DeferredError struct {
	Method   string // the request method
	URL      string // the request URL, redacted: no userinfo, query or fragment
	Route    string // the name of the policy that applied
	Key      string // the request's idempotency key, if any
	Attempts int    // attempts sent: 0 when the gate deferred first
	Status   int    // the last response's status, 0 when there was none
	// Reason is the verdict's reason; before a send, "cooling down",
	// "pacing", "concurrency limit" (RetryAt is heed's estimate) or "queue full".
	Reason  string
	Wait    time.Duration // the whole wait that did not fit, jitter included
	RetryAt time.Time     // the wall-clock time the work is eligible again
	Left    time.Duration // the time that remained before the deadline; 0 when none did, or when no deadline was set
	Err     error         // the last transport error, if any

	rawURL *url.URL // the request's URL, kept out of Error's text
}

// Error describes the deferral. It holds no secret from the request: the
// text of Err is shown with the URLs it quotes redacted.
func (e *DeferredError) Error() string {
	var b strings.Builder
	b.WriteString("heed: ")
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(e.URL)
	b.WriteString(" deferred: ")
	b.WriteString(e.Reason)
	if e.Status != 0 {
		b.WriteString(" (status ")
		b.WriteString(strconv.Itoa(e.Status))
		b.WriteByte(')')
	}
	b.WriteString("; retry at ")
	b.WriteString(e.RetryAt.UTC().Format(time.RFC3339Nano))
	b.WriteString(" (wait ")
	b.WriteString(e.Wait.String())
	b.WriteString(", left ")
	b.WriteString(e.Left.String())
	b.WriteString(", attempts ")
	b.WriteString(strconv.Itoa(e.Attempts))
	b.WriteByte(')')
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(rules.RedactError(e.Err, e.rawURL))
	}
	return b.String()
}

// Unwrap returns the last transport error, if any.
func (e *DeferredError) Unwrap() error { return e.Err }

// Is reports whether target is ErrDeferred.
func (e *DeferredError) Is(target error) bool { return target == ErrDeferred }

// deferred reports d as a deferral after attempts sends, and returns its
// *DeferredError.
func (c *call) deferred(d *decision, attempts int) *DeferredError {
	d.kind = EventDeferred
	c.decide(zapcore.WarnLevel, d)
	return &DeferredError{
		Method:   c.req.Method,
		URL:      c.redactedURL(),
		Route:    c.policy.name,
		Key:      c.key(),
		Attempts: attempts,
		Status:   c.status,
		Reason:   d.verdict.Reason,
		Wait:     d.wait,
		RetryAt:  d.retryAt,
		Left:     d.left,
		Err:      c.err,
		rawURL:   c.req.URL,
	}
}
