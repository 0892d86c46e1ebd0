package main

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/heed-go/heed"
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

	text, err := c.ask(ctx, "gpt-4o-mini", "hello")

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

	_, err := c.ask(context.Background(), "gpt-4o-mini", "hello")

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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()

	_, err := c.ask(ctx, "gpt-4o-mini", "hello")

	assert.Less(t, time.Since(start), time.Second, "a deferral returns at once, not at the 2s deadline")
	// The SDK hands back the *http.Client's error: a *url.Error around
	// heed's *DeferredError. errors.As and errors.Is see through both.
	var urlErr *url.Error
	require.ErrorAs(t, err, &urlErr)
	var deferred *heed.DeferredError
	require.ErrorAs(t, err, &deferred)
	assert.ErrorIs(t, err, heed.ErrDeferred)
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
	var out, errOut bytes.Buffer
	code := run(context.Background(), nil, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	s := out.String()
	assert.Contains(t, s, `reply: "Hello from the fake OpenAI."`)
	assert.Contains(t, s, "stopped: 429 insufficient_quota")
	assert.Contains(t, s, "deferred: rate limited (status 429) after 1 attempt(s)")
}

func TestRunAgainstBaseURLDefers(t *testing.T) {
	fake := newFakeOpenAI(rateLimited(time.Minute))
	defer fake.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test")
	var out, errOut bytes.Buffer

	code := run(context.Background(), []string{"-base-url", fake.URL(), "-deadline", "5s"}, &out, &errOut)

	assert.Equal(t, exitDeferred, code)
	assert.Regexp(t, `^retry-at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$`, out.String())
	assert.Len(t, fake.Arrivals(), 1)
}
