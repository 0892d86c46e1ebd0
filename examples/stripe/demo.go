// The demonstration the program runs against its own fake server.

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/stripe/stripe-go/v82"
	"go.uber.org/zap"
)

// scenario is one demonstration against its own fake server.
type scenario struct {
	title      string
	script     []step
	sdkRetries int64
}

// scenarios are what the program shows when no -base-url is given.
var scenarios = []scenario{
	{title: "a 409 lock_timeout with Stripe-Should-Retry: true is retried", script: []step{lockTimeout(409), created()}},
	{title: "a 500 with Stripe-Should-Retry: false stops at once", script: []step{serverError(), created()}},
	{title: "a create whose answer was lost is resent with the same key, applied once", script: []step{createdLost(), created()}},
	{title: "the SDK's own retries left on: a 429 lock_timeout is sent 3 x 3 times", script: []step{lockTimeout(429)}, sdkRetries: 2},
}

// demo runs every scenario against a loopback fake Stripe API and reports
// what the caller saw.
func demo(ctx context.Context, out io.Writer, log *zap.Logger) error {
	for i, s := range scenarios {
		sdkdemo.Title(out, i, s.title)
		fake := newFakeStripe(s.script...)
		c := newClient(fake.URL(), "sk_test_fake", policy, log, s.sdkRetries)
		cus, took, err := sdkdemo.Timed(ctx, 20*time.Second, func(ctx context.Context) (*stripe.Customer, error) {
			return c.createCustomer(ctx, "jenny.rosen@example.com", "")
		})

		if err == nil {
			replayed := cus.LastResponse.Header.Get("Idempotent-Replayed") == "true"
			fmt.Fprintf(out, "   created %s (replayed: %t)\n", cus.ID, replayed)
		} else {
			fmt.Fprintf(out, "   %s\n", describe(err))
		}
		got := fake.Arrivals()
		keys := make(map[string]bool)
		for _, a := range got {
			keys[a.key] = true
		}
		fmt.Fprintf(out, "   requests sent: %d with %d idempotency key(s), customers created: %d, took %s\n",
			len(got), len(keys), fake.Customers(), took)
		c.Close()
		fake.Close()
	}
	return nil
}
