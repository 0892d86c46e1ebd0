// What an error from the OpenAI SDK means for the caller.

package main

import (
	"fmt"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/openai/openai-go/v3"
)

// describe says what an error from the SDK means for the caller: a
// deferral to persist, a terminal API error to show, or another failure.
//
// The SDK returns transport errors as the *http.Client gives them: a
// *url.Error that wraps heed's *heed.DeferredError, so errors.As finds it.
// Responses of 400 and above become an *openai.Error carrying the status
// and OpenAI's error code.
func describe(err error) string {
	return sdkdemo.Describe(err,
		sdkdemo.As(func(d *heed.DeferredError) string {
			return fmt.Sprintf("deferred: %s (status %d) after %d attempt(s); the server asked for %s but only %s was left; retry at %s",
				d.Reason, d.Status, d.Attempts, d.Wait.Round(time.Millisecond),
				d.Left.Round(time.Millisecond), d.RetryAt.Format(time.RFC3339))
		}),
		sdkdemo.As(func(e *openai.Error) string {
			return fmt.Sprintf("stopped: %d %s: %s", e.StatusCode, e.Code, e.Message)
		}),
	)
}
