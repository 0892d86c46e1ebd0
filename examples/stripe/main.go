// Command stripe calls the Stripe API through the official Go SDK
// (github.com/stripe/stripe-go/v82) with heed as the transport of its
// backend's *http.Client and the SDK's own retries turned off
// (MaxNetworkRetries: stripe.Int64(0)).
//
// Without -base-url it starts a fake Stripe API on 127.0.0.1 and shows
// four cases: a lock_timeout that Stripe-Should-Retry: true says to retry,
// a 500 that Stripe-Should-Retry: false says not to, a create whose answer
// was lost resent with the SDK's own Idempotency-Key and applied once, and
// how the SDK's retries multiply heed's when left on.
//
// With -base-url (https://api.stripe.com) it creates one customer with the
// test-mode key in STRIPE_SECRET_KEY. A deferral prints
// "retry-at <RFC 3339>" and exits 75 (EX_TEMPFAIL), as `heed get` does.
package main

import "github.com/heed-go/heed/examples/internal/sdkdemo"

func main() { sdkdemo.Main(run) }

// run is the program; it returns the exit code.
var run = sdkdemo.Program{
	Name: "stripe", BaseURL: "Stripe API base URL, e.g. https://api.stripe.com",
	Flags: createFlags, Demo: demo, Describe: describe,
}.Run
