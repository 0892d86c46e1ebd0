// One write: creating a customer, from the command line or the demo.

package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/stripe/stripe-go/v82"
	"go.uber.org/zap"
)

// createCustomer creates a customer with email. key, when not empty, is
// the Idempotency-Key; otherwise the SDK makes one, the same for every
// attempt heed sends.
func (c *client) createCustomer(ctx context.Context, email, key string) (*stripe.Customer, error) {
	params := &stripe.CustomerCreateParams{Email: stripe.String(email)}
	if key != "" {
		params.SetIdempotencyKey(key)
	}
	return c.V1Customers.Create(ctx, params)
}

// createFlags registers -email and -idempotency-key and returns the live
// create: one customer, with the test-mode key in STRIPE_SECRET_KEY (a
// live key is a usage error), its ID printed.
func createFlags(fs *flag.FlagSet) sdkdemo.Connect {
	email := fs.String("email", "jenny.rosen@example.com", "the customer's email (with -base-url)")
	key := fs.String("idempotency-key", "", "the create's Idempotency-Key; reuse it to resume (with -base-url; empty: the SDK makes one)")
	return func(baseURL string, log *zap.Logger) (sdkdemo.Live, error) {
		secret := os.Getenv("STRIPE_SECRET_KEY")
		if !strings.Contains(secret, "_test_") {
			return sdkdemo.Live{}, errors.New("STRIPE_SECRET_KEY must be a test-mode key (sk_test_... or rk_test_...)")
		}
		c := newClient(baseURL, secret, policy, log, 0)
		create := func(ctx context.Context) (string, error) {
			cus, err := c.createCustomer(ctx, *email, *key)
			if err != nil {
				return "", err
			}
			return cus.ID, nil
		}
		return sdkdemo.Live{Do: create, Close: c.Close}, nil
	}
}
