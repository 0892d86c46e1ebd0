// What an error from the Anthropic SDK means for the caller.

package main

import (
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
)

// describe says what an error from the SDK means for the caller: a
// deferral to persist, an API error to show, or another failure.
//
// The SDK returns an attempt without a response as the *http.Client gives
// it: a *url.Error around heed's *heed.DeferredError, which errors.As
// finds. A response of 400 or above that ends the call becomes an
// *anthropic.Error carrying the status and the error type.
func describe(err error) string {
	return sdkdemo.Describe(err, sdkdemo.Deferral, sdkdemo.As(func(e *anthropic.Error) string {
		return fmt.Sprintf("stopped: %d %s: %s", e.StatusCode, e.Type(), e.Message)
	}))
}
