package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemotest"
	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// setup starts a fake OpenAI with script and an SDK client pointing at it.
func setup(t *testing.T, script ...reply) (*fakeOpenAI, *client) {
	t.Helper()
	fake := newFakeOpenAI(script...)
	c := newClient(fake.URL(), "sk-test", zaptest.NewLogger(t))
	t.Cleanup(func() {
		c.Close()
		fake.Close()
	})
	return fake, c
}

func TestRateLimitIsWaitedOut(t *testing.T) {
	const asked = 250 * time.Millisecond
	fake, c := setup(t, rateLimited(asked), completion("hi there"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	text, err := c.Ask(ctx, "gpt-4o-mini", "hello")

	require.NoError(t, err)
	assert.Equal(t, "hi there", text)
	got := fake.Arrivals()
	require.Len(t, got, 2)
	assert.GreaterOrEqual(t, got[1].at.Sub(got[0].at), asked, "second attempt came before retry-after-ms allowed")
	// Both attempts say retry count 0: the SDK sent once, heed retried.
	assert.Equal(t, "0", got[0].retryCount)
	assert.Equal(t, "0", got[1].retryCount)
}

func TestInsufficientQuotaStopsAtOnce(t *testing.T) {
	fake, c := setup(t, insufficientQuota(), completion("never sent"))
	start := time.Now()

	_, err := c.Ask(context.Background(), "gpt-4o-mini", "hello")

	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 429, apiErr.StatusCode)
	assert.Equal(t, "insufficient_quota", apiErr.Code)
	assert.NotErrorIs(t, err, heed.ErrDeferred)
	assert.Len(t, fake.Arrivals(), 1, "a billing 429 must not be retried")
	assert.Less(t, time.Since(start), time.Second)
	assert.Contains(t, describe(err), "stopped: 429 insufficient_quota")
}

func TestDeferralSurvivesTheSDK(t *testing.T) {
	const asked = 30 * time.Second
	fake, c := setup(t, rateLimited(asked), completion("never sent"))
	ctx := sdkdemotest.Context(t, 2*time.Second)
	start := time.Now()

	_, err := c.Ask(ctx, "gpt-4o-mini", "hello")

	assert.Less(t, time.Since(start), time.Second, "a deferral returns at once, not at the 2s deadline")
	// The SDK hands back the *http.Client's error: a *url.Error around
	// heed's *DeferredError. errors.As and errors.Is see through both.
	deferred := sdkdemotest.RequireDeferred(t, err)
	var apiErr *openai.Error
	assert.False(t, errors.As(err, &apiErr), "a deferral is not an API error")

	got := fake.Arrivals()
	require.Len(t, got, 1)
	assert.Equal(t, 429, deferred.Status)
	assert.Equal(t, 1, deferred.Attempts)
	assert.Equal(t, "openai", deferred.Route)
	assert.GreaterOrEqual(t, deferred.Wait, asked)
	assert.False(t, deferred.RetryAt.Before(got[0].at.Add(asked)), "RetryAt is never earlier than the server asked")
	assert.Contains(t, describe(err), "deferred: rate limited")
}

func TestRunDemo(t *testing.T) {
	sdkdemotest.RunDemo(t, run,
		`reply: "Hello from the fake OpenAI."`,
		"stopped: 429 insufficient_quota",
		"deferred: rate limited (status 429) after 1 attempt(s)")
}

func TestRunAgainstBaseURLDefers(t *testing.T) {
	fake := newFakeOpenAI(rateLimited(time.Minute))
	defer fake.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test")

	sdkdemotest.RunDefers(t, run, "-base-url", fake.URL(), "-deadline", "5s")

	assert.Len(t, fake.Arrivals(), 1)
}
