package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed"
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
	var deferred *heed.DeferredError
	var apiErr *openai.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &deferred):
		return fmt.Sprintf("deferred: %s (status %d) after %d attempt(s); the server asked for %s but only %s was left; retry at %s",
			deferred.Reason, deferred.Status, deferred.Attempts, deferred.Wait.Round(time.Millisecond),
			deferred.Left.Round(time.Millisecond), deferred.RetryAt.Format(time.RFC3339))
	case errors.As(err, &apiErr):
		return fmt.Sprintf("stopped: %d %s: %s", apiErr.StatusCode, apiErr.Code, apiErr.Message)
	}
	return "failed: " + err.Error()
}
