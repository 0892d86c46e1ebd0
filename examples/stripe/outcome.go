// What an error from the Stripe SDK means for the caller.

package main

import (
	"fmt"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/stripe/stripe-go/v82"
)

// describe says what an error from the SDK means for the caller: a
// deferral to persist, an API error to show, or another failure.
//
// The backend returns a transport error as the *http.Client gives it: a
// *url.Error around heed's *heed.DeferredError, which errors.As finds. A
// response of 400 or above becomes a *stripe.Error with the status, type
// and code.
func describe(err error) string {
	return sdkdemo.Describe(err, sdkdemo.Deferral, sdkdemo.As(func(e *stripe.Error) string {
		kind := string(e.Type)
		if e.Code != "" {
			kind += " " + string(e.Code)
		}
		return fmt.Sprintf("stopped: %d %s: %s", e.HTTPStatusCode, kind, e.Msg)
	}))
}
