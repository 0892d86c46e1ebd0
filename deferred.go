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
)

// ErrDeferred is the error that every *DeferredError matches with errors.Is.
var ErrDeferred = errors.New("heed: deferred")

// DeferredError is returned by RoundTrip, at once, when the wait the server
// asked for (or the backoff) cannot fit the caller's remaining time or
// exceeds Policy.MaxWait. heed never waits less than asked instead: the
// work is eligible again at RetryAt, which a worker should persist with the
// job and honour before trying again.
type DeferredError struct {
	// Method is the request method.
	Method string
	// URL is the request URL, redacted: no userinfo, no query, no fragment.
	URL string
	// Route is the name of the policy that applied.
	Route string
	// Key is the request's idempotency key, if it had one.
	Key string
	// Attempts is the number of attempts actually sent: 0 when a gate
	// deferred before sending.
	Attempts int
	// Status is the last response's status, 0 when the last attempt got no
	// response or none was sent.
	Status int
	// Reason is the verdict's reason; or, deferred before a send, "cooling
	// down" (a hold or quota), "pacing" (a pace or a Limit's rate),
	// "concurrency limit" (a Limit's InFlight; RetryAt is heed's estimate)
	// or "queue full" (Policy.MaxWaiting).
	Reason string
	// Wait is the full wait that did not fit: hint or backoff, jitter
	// included.
	Wait time.Duration
	// RetryAt is the wall-clock time the work is eligible again. Persist
	// it.
	RetryAt time.Time
	// Left is the time that remained when deciding: 0 when none remained
	// or when the request had no time limit (no context deadline and no
	// Policy.MaxElapsed), in which case Wait exceeded Policy.MaxWait.
	Left time.Duration
	// Err is the last transport error, if any.
	Err error

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
