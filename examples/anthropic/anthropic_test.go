package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// setup starts a fake Anthropic API with script and an SDK client for it.
func setup(t *testing.T, script []reply, extra ...option.RequestOption) (*fakeAnthropic, *client) {
	t.Helper()
	fake := newFakeAnthropic(script...)
	c := newClientWith(fake.URL(), "sk-ant-test", zaptest.NewLogger(t), extra...)
	t.Cleanup(func() {
		c.Close()
		fake.Close()
	})
	return fake, c
}

func TestRateLimitIsWaitedExactly(t *testing.T) {
	for _, asked := range []time.Duration{time.Second, 2 * time.Second} {
		t.Run(asked.String(), func(t *testing.T) {
			t.Parallel()
			fake, c := setup(t, []reply{rateLimited(asked), message("hi there")})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			text, err := c.Ask(ctx, "claude-haiku-5-5", "hello")

			require.NoError(t, err)
			assert.Equal(t, "hi there", text)
			got := fake.Arrivals()
			require.Len(t, got, 2)
			gap := got[1].at.Sub(got[0].at)
			assert.GreaterOrEqual(t, gap, asked, "the retry came before retry-after allowed")
			assert.Less(t, gap, asked+750*time.Millisecond, "heed waits what retry-after asks, not a backoff on top")
			// Both attempts say retry count 0: the SDK sent once, heed retried.
			assert.Equal(t, []string{"0", "0"}, []string{got[0].retryCount, got[1].retryCount})
		})
	}
}

func TestOverloadedIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		overloads  int
		wantFaster time.Duration // the policy's backoff: 250-500ms, then 500ms-1s
	}{
		{"one 529", 1, 2 * time.Second},
		{"two 529s", 2, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := make([]reply, 0, tc.overloads+1)
			for range tc.overloads {
				script = append(script, overloaded())
			}
			fake, c := setup(t, append(script, message("served")))
			start := time.Now()

			text, err := c.Ask(context.Background(), "claude-haiku-5-5", "hello")

			require.NoError(t, err)
			assert.Equal(t, "served", text)
			assert.Len(t, fake.Arrivals(), tc.overloads+1)
			assert.Less(t, time.Since(start), tc.wantFaster)
		})
	}
}

func TestDeferralComesBackThroughTheSDK(t *testing.T) {
	for _, tc := range []struct {
		name     string
		asked    time.Duration
		deadline time.Duration // 0: none; the wait then exceeds MaxWait (60s)
		// maxLeft bounds the time heed saw left: the caller's deadline, or
		// without one the 10-minute timeout the SDK gives each attempt of
		// a non-streaming message.
		maxLeft time.Duration
	}{
		{"retry-after past the deadline", 30 * time.Second, 2 * time.Second, 2 * time.Second},
		{"retry-after past MaxWait", 2 * time.Minute, 0, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, c := setup(t, []reply{rateLimited(tc.asked), message("never sent")})
			ctx := sdkdemotest.Context(t, tc.deadline)
			start := time.Now()

			_, err := c.Ask(ctx, "claude-haiku-5-5", "hello")

			assert.Less(t, time.Since(start), time.Second, "a deferral returns at once")
			// The SDK returns the *http.Client's error as it is: a
			// *url.Error around heed's *DeferredError.
			deferred := sdkdemotest.RequireDeferred(t, err)
			var apiErr *anthropic.Error
			assert.False(t, errors.As(err, &apiErr), "a deferral is not an API error")

			got := fake.Arrivals()
			require.Len(t, got, 1)
			assert.Equal(t, 429, deferred.Status)
			assert.Equal(t, 1, deferred.Attempts)
			assert.Equal(t, "rate limited", deferred.Reason)
			assert.Equal(t, "anthropic", deferred.Route)
			assert.GreaterOrEqual(t, deferred.Wait, tc.asked)
			assert.Positive(t, deferred.Left)
			assert.LessOrEqual(t, deferred.Left, tc.maxLeft)
			assert.False(t, deferred.RetryAt.Before(got[0].at.Add(tc.asked)), "RetryAt is never earlier than the server asked")
		})
	}
}

// TestSDKRetriesLeftOnLoseThe429 is the failure mode the README warns of:
// with the SDK's default of 2 retries, heed's deferral is a response-less
// attempt, which the SDK retries as a connection error after its own
// backoff. heed's gate, held by the 429, defers those retries before
// sending, so the call ends with a deferral that has lost the 429.
func TestSDKRetriesLeftOnLoseThe429(t *testing.T) {
	const asked = 2 * time.Minute
	fake, c := setup(t, []reply{rateLimited(asked), message("never sent")}, option.WithMaxRetries(2))
	start := time.Now()

	_, err := c.Ask(context.Background(), "claude-haiku-5-5", "hello")
	took := time.Since(start)

	var deferred *heed.DeferredError
	require.ErrorAs(t, err, &deferred)
	assert.Equal(t, 0, deferred.Attempts, "the last deferral was at the gate, before sending")
	assert.Equal(t, 0, deferred.Status, "the 429 is lost")
	assert.Equal(t, "cooling down", deferred.Reason)
	assert.Len(t, fake.Arrivals(), 1, "the SDK's retries never reached the server")
	// The SDK slept 0.5s and 1s (less up to a quarter) before its retries.
	assert.GreaterOrEqual(t, took, time.Second, "the SDK's backoff delayed the deferral")
	assert.False(t, deferred.RetryAt.Before(fake.Arrivals()[0].at.Add(asked-time.Second)), "the gate still knows the hold")
}

func TestRunDemo(t *testing.T) {
	sdkdemotest.RunDemo(t, run,
		`reply: "Hello from the fake Anthropic."`,
		`reply: "Served after an overload."`,
		"deferred: rate limited (status 429) after 1 attempt(s)",
		"deferred: cooling down (status 0) after 0 attempt(s)")
}

func TestRunAgainstBaseURLDefers(t *testing.T) {
	fake := newFakeAnthropic(rateLimited(time.Minute))
	defer fake.Close()
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")

	sdkdemotest.RunDefers(t, run, "-base-url", fake.URL(), "-deadline", "5s")

	assert.Len(t, fake.Arrivals(), 1)
}
