package main

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"
	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// setup starts a fake GitHub with the scripts and a client for it.
func setup(t *testing.T, coreScript, searchScript []reply, sdkCheck bool, opts ...heed.Option) (*fakeGitHub, *client) {
	t.Helper()
	fake := newFakeGitHub(coreScript, searchScript)
	c, err := newClient(fake.URL(), "ghp_test", zaptest.NewLogger(t), sdkCheck, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		fake.Close()
	})
	return fake, c
}

func TestPrimaryLimitIsWaitedToTheReset(t *testing.T) {
	for _, tc := range []struct {
		status  int
		resetIn time.Duration
	}{
		{http.StatusForbidden, time.Second},
		{http.StatusTooManyRequests, 2 * time.Second},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			t.Parallel()
			fake, c := setup(t, []reply{primary(tc.status, tc.resetIn), ok(4999, time.Hour)}, nil, false)

			name, err := c.getRepo(context.Background(), "heed-go", "heed")

			require.NoError(t, err)
			assert.Equal(t, "heed-go/heed", name)
			got := fake.Arrivals(core)
			require.Len(t, got, 2)
			assert.False(t, got[1].at.Before(got[0].reset), "the retry came before x-ratelimit-reset")
			assert.Less(t, got[1].at.Sub(got[0].reset), 750*time.Millisecond, "heed waits to the reset, not beyond")
		})
	}
}

func TestSecondaryLimitIsWaited(t *testing.T) {
	for _, asked := range []time.Duration{time.Second, 2 * time.Second} {
		t.Run(asked.String(), func(t *testing.T) {
			t.Parallel()
			fake, c := setup(t, []reply{secondary(asked), ok(4999, time.Hour)}, nil, false)

			_, err := c.getRepo(context.Background(), "heed-go", "heed")

			require.NoError(t, err)
			got := fake.Arrivals(core)
			require.Len(t, got, 2)
			gap := got[1].at.Sub(got[0].at)
			assert.GreaterOrEqual(t, gap, asked, "the retry came before retry-after allowed")
			assert.Less(t, gap, asked+750*time.Millisecond)
		})
	}
}

func TestLimitTooFarOffDefers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    reply
		deadline time.Duration // 0: none; the wait then exceeds MaxWait (60s)
		status   int
		// notBefore is the earliest RetryAt may be, from the arrival.
		notBefore func(a arrival) time.Time
	}{
		{
			"primary 403 resetting past MaxWait", primary(http.StatusForbidden, 2*time.Minute), 0, 403,
			func(a arrival) time.Time { return a.reset },
		},
		{
			"primary 429 resetting past the deadline", primary(http.StatusTooManyRequests, 30*time.Second), 2 * time.Second, 429,
			func(a arrival) time.Time { return a.reset },
		},
		{
			"secondary with retry-after past MaxWait", secondary(90 * time.Second), 0, 403,
			func(a arrival) time.Time { return a.at.Add(90 * time.Second) },
		},
		{
			"secondary without retry-after: at least a minute", secondary(0), 2 * time.Second, 403,
			func(a arrival) time.Time { return a.at.Add(time.Minute) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, c := setup(t, []reply{tc.first, ok(4999, time.Hour)}, nil, false)
			ctx := sdkdemotest.Context(t, tc.deadline)
			start := time.Now()

			_, err := c.getRepo(ctx, "heed-go", "heed")

			assert.Less(t, time.Since(start), time.Second, "a deferral returns at once")
			deferred := sdkdemotest.RequireDeferred(t, err, "go-github returns the *http.Client's error, its URL sanitized")
			var rateErr *github.RateLimitError
			var abuseErr *github.AbuseRateLimitError
			assert.False(t, errors.As(err, &rateErr) || errors.As(err, &abuseErr), "heed drained the limit response")
			got := fake.Arrivals(core)
			require.Len(t, got, 1)
			assert.Equal(t, 1, deferred.Attempts)
			assert.Equal(t, tc.status, deferred.Status)
			assert.Equal(t, "rate limited", deferred.Reason)
			assert.False(t, deferred.RetryAt.Before(tc.notBefore(got[0])), "RetryAt is never earlier than GitHub asked")
			assert.Less(t, deferred.RetryAt.Sub(tc.notBefore(got[0])), time.Second)
		})
	}
}

// TestSearchLimitAndCoreCalls: GitHub names the limit each answer counted
// (x-ratelimit-resource), and heed keeps each named limit a scope of its
// own, so a spent search limit (a 403, or the last search's 200 with
// remaining 0) holds the next search call, deferred at the gate, and never
// a core call, which GitHub serves.
func TestSearchLimitAndCoreCalls(t *testing.T) {
	for _, tc := range []struct {
		name        string
		search      reply
		searchFails bool
	}{
		{"403 search limit", primary(http.StatusForbidden, 2*time.Minute), true},
		{"last search spends the limit", ok(0, 2*time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, c := setup(t, []reply{ok(4999, time.Hour)}, []reply{tc.search}, false)
			ctx := context.Background()

			_, err := c.searchRepos(ctx, "heed")
			if tc.searchFails {
				var deferred *heed.DeferredError
				require.ErrorAs(t, err, &deferred)
				assert.Equal(t, 403, deferred.Status)
			} else {
				require.NoError(t, err)
			}

			name, err := c.getRepo(ctx, "heed-go", "heed")
			require.NoError(t, err, "a core call is not held by the search limit")
			assert.Equal(t, "heed-go/heed", name)
			assert.Len(t, fake.Arrivals(core), 1)

			_, err = c.searchRepos(ctx, "heed")
			var deferred *heed.DeferredError
			require.ErrorAs(t, err, &deferred, "the next search is held by the search limit")
			assert.Equal(t, 0, deferred.Attempts, "deferred at the gate, never sent")
			assert.Len(t, fake.Arrivals(search), 1)
			assert.False(t, deferred.RetryAt.Before(fake.Arrivals(search)[0].reset))
		})
	}
}

// TestSDKRateLimitCheck shows go-github's own check against heed's. After
// a 200 with x-ratelimit-remaining: 0, both refuse the next call without
// sending it; left on, go-github answers with a *github.RateLimitError
// and heed is never asked, so no *heed.DeferredError comes back.
func TestSDKRateLimitCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sdkCheck bool
	}{
		{"go-github's check on", true},
		{"go-github's check off (WithDisableRateLimitCheck)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var roundTrips atomic.Int32
			observe := heed.WithObserver(func(e heed.Event) {
				if e.Kind == heed.EventAttempt || e.Kind == heed.EventDeferred {
					roundTrips.Add(1)
				}
			})
			fake, c := setup(t, []reply{ok(0, 2*time.Minute), ok(4999, time.Hour)}, nil, tc.sdkCheck, observe)
			ctx := context.Background()
			_, err := c.getRepo(ctx, "heed-go", "heed")
			require.NoError(t, err)
			require.Equal(t, int32(1), roundTrips.Load())

			_, err = c.getRepo(ctx, "heed-go", "heed")

			assert.Len(t, fake.Arrivals(core), 1, "the second call is not sent")
			var rateErr *github.RateLimitError
			var deferred *heed.DeferredError
			if tc.sdkCheck {
				require.ErrorAs(t, err, &rateErr)
				assert.Equal(t, 0, rateErr.Rate.Remaining)
				assert.False(t, errors.As(err, &deferred), "no deferral to store: heed was not asked")
				assert.Equal(t, int32(1), roundTrips.Load(), "heed saw no second call")
				return
			}
			require.ErrorAs(t, err, &deferred)
			assert.False(t, errors.As(err, &rateErr))
			assert.Equal(t, 0, deferred.Attempts)
			assert.False(t, deferred.RetryAt.Before(fake.Arrivals(core)[0].reset), "RetryAt is the reset")
			assert.Equal(t, int32(2), roundTrips.Load())
		})
	}
}

func TestRunDemo(t *testing.T) {
	sdkdemotest.RunDemo(t, run,
		"core call: repository heed-go/heed",
		"core call: deferred: rate limited (status 403) after 1 attempt(s)",
		"search call: deferred: cooling down (status 0) after 0 attempt(s)",
		"core call: go-github refused: 403 API rate limit of 5000 still exceeded")
}

func TestRunAgainstBaseURLDefers(t *testing.T) {
	fake := newFakeGitHub([]reply{primary(http.StatusForbidden, 2*time.Minute)}, nil)
	defer fake.Close()
	t.Setenv("GITHUB_TOKEN", "ghp_test")

	sdkdemotest.RunDefers(t, run, "-base-url", fake.URL(), "-repo", "heed-go/heed")

	assert.Len(t, fake.Arrivals(core), 1)
}
