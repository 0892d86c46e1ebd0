// What an error from go-github means for the caller.

package main

import (
	"fmt"
	"time"

	"github.com/google/go-github/v93/github"
	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
)

// describe says what an error from go-github means for the caller.
//
// go-github returns a transport error as a *url.Error (its URL sanitized)
// around heed's *heed.DeferredError, which errors.As finds. Responses it
// reads as limits become a *github.RateLimitError (primary) or
// *github.AbuseRateLimitError (secondary); other errors an
// *github.ErrorResponse. With its own check on, it also returns a
// *github.RateLimitError for a call it did not send.
func describe(err error) string {
	return sdkdemo.Describe(err,
		sdkdemo.As(func(d *heed.DeferredError) string {
			return fmt.Sprintf("deferred: %s (status %d) after %d attempt(s); wait %s; retry at %s",
				d.Reason, d.Status, d.Attempts, d.Wait.Round(time.Second), d.RetryAt.Format(time.RFC3339))
		}),
		sdkdemo.As(func(e *github.RateLimitError) string {
			return fmt.Sprintf("go-github refused: %d %s (remaining %d, reset %s)", e.Response.StatusCode, e.Message,
				e.Rate.Remaining, e.Rate.Reset.Format(time.RFC3339))
		}),
		sdkdemo.As(func(e *github.AbuseRateLimitError) string {
			return fmt.Sprintf("secondary limit: %d %s", e.Response.StatusCode, e.Message)
		}),
		sdkdemo.As(func(e *github.ErrorResponse) string {
			return fmt.Sprintf("stopped: %d %s", e.Response.StatusCode, e.Message)
		}),
	)
}
