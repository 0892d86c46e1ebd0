package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/heed-go/heed/examples/internal/sdkdemotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"go.uber.org/zap/zaptest"
)

// setup starts a fake Stripe with script and an SDK client for it.
func setup(t *testing.T, p heed.Policy, sdkRetries int64, script ...step) (*fakeStripe, *client) {
	t.Helper()
	fake := newFakeStripe(script...)
	c := newClient(fake.URL(), "sk_test_fake", p, zaptest.NewLogger(t), sdkRetries)
	t.Cleanup(func() {
		c.Close()
		fake.Close()
	})
	return fake, c
}

// keys returns the Idempotency-Key of each arrival.
func keys(got []arrival) []string {
	out := make([]string, len(got))
	for i, a := range got {
		out[i] = a.key
	}
	return out
}

func TestStripeShouldRetryIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    step
		requests int // sent in all
		status   int // of the *stripe.Error, 0 when the create succeeds
	}{
		{"500 with Stripe-Should-Retry: false is not retried", serverError(), 1, 500},
		{"409 lock_timeout with Stripe-Should-Retry: true is retried", lockTimeout(http.StatusConflict), 2, 0},
		{"429 lock_timeout with Stripe-Should-Retry: true is retried", lockTimeout(http.StatusTooManyRequests), 2, 0},
		{"429 rate_limit, no header, is retried after a backoff", rateLimited(), 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake, c := setup(t, policy, 0, tc.first, created())

			cus, err := c.createCustomer(context.Background(), "a@example.com", "")

			got := fake.Arrivals()
			require.Len(t, got, tc.requests)
			if tc.status != 0 {
				var apiErr *stripe.Error
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tc.status, apiErr.HTTPStatusCode)
				assert.Equal(t, 0, fake.Customers())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "cus_fake1", cus.ID)
			assert.Equal(t, 1, fake.Customers())
			assert.Equal(t, got[0].key, got[1].key, "heed's retry carries the SDK's key")
		})
	}
}

func TestIdempotencyKeyIsTheSameOnEveryAttempt(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string // "": the SDK makes one
	}{
		{"the SDK's own key", ""},
		{"the caller's key", "order-42-customer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake, c := setup(t, policy, 0, lockTimeout(http.StatusConflict), lockTimeout(http.StatusConflict), created())

			cus, err := c.createCustomer(context.Background(), "a@example.com", tc.key)

			require.NoError(t, err)
			got := keys(fake.Arrivals())
			require.Len(t, got, 3)
			require.NotEmpty(t, got[0], "stripe-go puts an Idempotency-Key on every POST")
			if tc.key != "" {
				assert.Equal(t, tc.key, got[0])
			}
			assert.Equal(t, []string{got[0], got[0], got[0]}, got)
			assert.Equal(t, got[0], cus.LastResponse.IdempotencyKey)
		})
	}
}

func TestLostAnswerIsResentAndAppliedOnce(t *testing.T) {
	for _, lost := range []int{1, 2} {
		t.Run(map[int]string{1: "lost once", 2: "lost twice"}[lost], func(t *testing.T) {
			t.Parallel()
			// The first request creates the customer and loses the answer;
			// later lost steps are never reached: the key replays.
			script := []step{createdLost()}
			for range lost - 1 {
				script = append(script, createdLost())
			}
			fake, c := setup(t, policy, 0, append(script, created())...)

			cus, err := c.createCustomer(context.Background(), "a@example.com", "")

			require.NoError(t, err)
			assert.Equal(t, "cus_fake1", cus.ID)
			assert.Equal(t, 1, fake.Customers(), "applied once")
			got := fake.Arrivals()
			require.Len(t, got, 2, "one resend, answered from the saved result")
			assert.Equal(t, got[0].key, got[1].key)
			assert.False(t, got[0].replayed)
			assert.True(t, got[1].replayed)
			assert.Equal(t, "true", cus.LastResponse.Header.Get("Idempotent-Replayed"))
		})
	}
}

func TestDeferralComesBackThroughTheSDK(t *testing.T) {
	// Stripe's 429 gives no wait: heed's backoff (here 5s) is the wait,
	// and it does not fit the second left.
	p := policy
	p.Backoff = heed.Constant(5 * time.Second)
	fake, c := setup(t, p, 0, rateLimited(), created())
	ctx := sdkdemotest.Context(t, time.Second)
	start := time.Now()

	_, err := c.createCustomer(ctx, "a@example.com", "")

	assert.Less(t, time.Since(start), 500*time.Millisecond, "a deferral returns at once")
	deferred := sdkdemotest.RequireDeferred(t, err, "the backend returns the *http.Client's error as it is")
	var apiErr *stripe.Error
	assert.False(t, errors.As(err, &apiErr))
	assert.Equal(t, 1, deferred.Attempts)
	assert.Equal(t, 429, deferred.Status)
	assert.Equal(t, "stripe", deferred.Route)
	got := fake.Arrivals()
	require.Len(t, got, 1)
	assert.Equal(t, got[0].key, deferred.Key, "the key to resume the create with")
	assert.Equal(t, 5*time.Second, deferred.Wait)
}

// TestSDKOwnRetries shows why MaxNetworkRetries must be 0. stripe-go
// decides on an API error by its type alone: it retries a 429
// lock_timeout, never a 409 whatever Stripe-Should-Retry says, and on top
// of heed it multiplies heed's attempts.
func TestSDKOwnRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		heed     bool
		first    step
		requests int
	}{
		{"SDK alone ignores Stripe-Should-Retry: true on a 409", false, lockTimeout(http.StatusConflict), 1},
		{"SDK over heed sends a 429 lock_timeout 3 x 3 times", true, lockTimeout(http.StatusTooManyRequests), 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeStripe(tc.first)
			defer fake.Close()
			var c *client
			if tc.heed {
				c = newClient(fake.URL(), "sk_test_fake", policy, zaptest.NewLogger(t), stripe.DefaultMaxNetworkRetries)
			} else {
				c = sdkOnly(fake.URL())
			}
			defer c.Close()

			_, err := c.createCustomer(context.Background(), "a@example.com", "")

			var apiErr *stripe.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "lock_timeout", string(apiErr.Code))
			got := fake.Arrivals()
			assert.Len(t, got, tc.requests)
			for _, a := range got {
				assert.Equal(t, got[0].key, a.key, "one key across every layer's attempts")
			}
		})
	}
}

// sdkOnly is a Stripe client with its own default retries and no heed.
func sdkOnly(baseURL string) *client {
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	cfg := &stripe.BackendConfig{
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(stripe.DefaultMaxNetworkRetries),
		EnableTelemetry:   stripe.Bool(false),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		URL:               stripe.String(baseURL),
	}
	return &client{Client: stripe.NewClient("sk_test_fake", stripe.WithBackends(stripe.NewBackendsWithConfig(cfg))), hc: hc}
}

func TestRunDemo(t *testing.T) {
	sdkdemotest.RunDemo(t, run,
		"created cus_fake1 (replayed: false)\n   requests sent: 2 with 1 idempotency key(s), customers created: 1",
		"stopped: 500 api_error: An unknown error occurred.\n   requests sent: 1 ",
		"created cus_fake1 (replayed: true)\n   requests sent: 2 with 1 idempotency key(s), customers created: 1",
		"requests sent: 9 with 1 idempotency key(s), customers created: 0")
}

func TestRunRefusesALiveKey(t *testing.T) {
	t.Setenv("STRIPE_SECRET_KEY", "sk_live_x")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-base-url", "http://127.0.0.1:1"}, &out, &errOut)
	assert.Equal(t, sdkdemo.ExitUsage, code)
	assert.Contains(t, errOut.String(), "test-mode key")
}

func TestRunAgainstBaseURL(t *testing.T) {
	fake := newFakeStripe(createdLost(), created())
	defer fake.Close()
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_fake")
	var out, errOut bytes.Buffer

	code := run(context.Background(), []string{"-base-url", fake.URL(), "-idempotency-key", "job-7"}, &out, &errOut)

	assert.Equal(t, sdkdemo.ExitOK, code, errOut.String())
	assert.Equal(t, "cus_fake1\n", out.String())
	assert.Equal(t, []string{"job-7", "job-7"}, keys(fake.Arrivals()))
}
