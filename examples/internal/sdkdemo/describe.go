// What an error from an SDK means for the caller, read in order: a
// deferral to persist, an API error to show, or another failure.

package sdkdemo

import (
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed"
)

// Reading phrases an error it recognizes; ok is false for any other.
type Reading func(err error) (text string, ok bool)

// As is the Reading of errors that errors.As finds as an E, phrased by
// say. SDKs return heed's *heed.DeferredError inside a *url.Error, and
// their API errors as types of their own; As sees through both.
func As[E error](say func(E) string) Reading {
	return func(err error) (string, bool) {
		var e E
		if !errors.As(err, &e) {
			return "", false
		}
		return say(e), true
	}
}

// Deferral is the Reading of a *heed.DeferredError as
// "deferred: <reason> (status N) after N attempt(s); wait W, L left;
// retry at <RFC 3339>", durations to the millisecond.
var Deferral = As(func(d *heed.DeferredError) string {
	return fmt.Sprintf("deferred: %s (status %d) after %d attempt(s); wait %s, %s left; retry at %s",
		d.Reason, d.Status, d.Attempts, d.Wait.Round(time.Millisecond),
		d.Left.Round(time.Millisecond), d.RetryAt.Format(time.RFC3339))
})

// Describe says what err means: "ok" when it is nil, else the text of the
// first of readings that recognizes it, else "failed: " and its message.
func Describe(err error, readings ...Reading) string {
	if err == nil {
		return "ok"
	}
	for _, r := range readings {
		if text, ok := r(err); ok {
			return text
		}
	}
	return "failed: " + err.Error()
}
