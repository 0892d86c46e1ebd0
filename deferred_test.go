package heed_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

func TestDeferredErrorIsAndAs(t *testing.T) {
	de := &heed.DeferredError{
		Method: "POST", URL: "https://api.example/v1/jobs", Route: "jobs", Attempts: 2, Status: 429,
		Reason: "rate limited", Wait: 2 * time.Minute, RetryAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Left: 9 * time.Second, Err: io.ErrUnexpectedEOF,
	}
	wrapped := fmt.Errorf("calling vendor: %w", de)
	assert.True(t, errors.Is(wrapped, heed.ErrDeferred))
	assert.True(t, errors.Is(wrapped, io.ErrUnexpectedEOF))
	var got *heed.DeferredError
	assert.True(t, errors.As(wrapped, &got))
	assert.Same(t, de, got)
	assert.Equal(t,
		"heed: POST https://api.example/v1/jobs deferred: rate limited (status 429); retry at 2026-11-29T12:00:00Z (wait 2m0s, left 9s, attempts 2): unexpected EOF",
		de.Error())
	assert.False(t, errors.Is(errors.New("other"), heed.ErrDeferred))
}

// Budget ends at the earlier of the context deadline and start + MaxElapsed,
// start being the start of the RoundTrip, not of an attempt.
func TestDesignBudgetIsTheEarlierEnd(t *testing.T) {
	tests := []struct {
		name     string
		policy   heed.Policy
		deadline time.Duration
		hint     string
		attempts int
		left     time.Duration
		retryAt  time.Duration // from the start
	}{
		{"MaxElapsed before the deadline", heed.Policy{MaxElapsed: 4 * time.Second}, 20 * time.Second, "5", 1, 4 * time.Second, 5 * time.Second},
		{"deadline before MaxElapsed", heed.Policy{MaxElapsed: 20 * time.Second}, 4 * time.Second, "5", 1, 4 * time.Second, 5 * time.Second},
		{"MaxElapsed counts from the RoundTrip's start", heed.Policy{MaxElapsed: 10 * time.Second}, 0, "6", 2, 4 * time.Second, 12 * time.Second},
		{"the deadline counts from the RoundTrip's start", heed.Policy{}, 10 * time.Second, "6", 2, 4 * time.Second, 12 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := withDeadline(t, t.Context(), tt.deadline)
				rt := script(tooMany("Retry-After", tt.hint))
				start := time.Now()
				_, err := heed.New(rt, heed.WithPolicy(exact(tt.policy))).RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, tt.attempts, de.Attempts)
				assert.Len(t, rt.requests(), tt.attempts)
				assert.Equal(t, tt.left, de.Left)
				assert.Equal(t, start.Add(tt.retryAt), de.RetryAt)
			})
		})
	}
}

// The deadline test uses the wait with its jitter, and a deferral reports it.
func TestDesignBudgetCountsJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 20 {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			rt := script(tooMany("Retry-After", "5"), ok200)
			start := time.Now()
			_, err := heed.New(rt, heed.WithPolicy(heed.Policy{Jitter: time.Second})).RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
			cancel()
			var de *heed.DeferredError
			require.ErrorAs(t, err, &de, "5s + jitter does not fit 5s")
			assert.Greater(t, de.Wait, 5*time.Second)
			assert.LessOrEqual(t, de.Wait, 6*time.Second)
			assert.Equal(t, start.Add(de.Wait), de.RetryAt)
		}
	})
}

func TestDesignDeferredErrorFields(t *testing.T) {
	tests := []struct {
		name     string
		policy   heed.Policy
		method   string
		deadline time.Duration
		latency  time.Duration
		replies  []reply
		check    func(t *testing.T, de *heed.DeferredError, start time.Time, rt *fakeRT)
	}{
		{"Attempts counts every send", heed.Policy{}, "GET", 0, 0, []reply{tooMany("Retry-After", "5"), tooMany("Retry-After", "120")},
			func(t *testing.T, de *heed.DeferredError, start time.Time, _ *fakeRT) {
				assert.Equal(t, 2, de.Attempts)
				assert.Equal(t, 429, de.Status)
				assert.Equal(t, "rate limited", de.Reason)
				assert.Equal(t, 120*time.Second, de.Wait)
				assert.Equal(t, start.Add(125*time.Second), de.RetryAt)
				assert.NoError(t, de.Err)
			}},
		{"Status 0 when the last attempt got no response", heed.Policy{Backoff: heed.Constant(2 * time.Minute)}, "GET", 0, 0, []reply{tooMany("Retry-After", "1"), {err: refuseErr}},
			func(t *testing.T, de *heed.DeferredError, _ time.Time, _ *fakeRT) {
				assert.Equal(t, 2, de.Attempts)
				assert.Equal(t, 0, de.Status)
				assert.Equal(t, "connection refused", de.Reason)
				assert.ErrorIs(t, de.Err, refuseErr)
				assert.Equal(t, 2*time.Minute, de.Wait, "a backoff that did not fit")
			}},
		{"Wait is the hint raised to MinWait", heed.Policy{MinWait: 30 * time.Second}, "GET", 10 * time.Second, 0, []reply{tooMany("Retry-After", "0")},
			func(t *testing.T, de *heed.DeferredError, start time.Time, _ *fakeRT) {
				assert.Equal(t, 30*time.Second, de.Wait)
				assert.Equal(t, 10*time.Second, de.Left)
				assert.Equal(t, start.Add(30*time.Second), de.RetryAt)
			}},
		{"Left is 0 when no time remains", heed.Policy{MaxElapsed: 2 * time.Second}, "GET", 0, 3 * time.Second, []reply{tooMany("Retry-After", "1")},
			func(t *testing.T, de *heed.DeferredError, _ time.Time, _ *fakeRT) {
				assert.Equal(t, time.Duration(0), de.Left)
				assert.Equal(t, time.Second, de.Wait)
			}},
		{"Key is the key heed added", heed.Policy{KeyHeader: "X-Request-Key"}, "POST", 10 * time.Second, 0, []reply{tooMany("Retry-After", "120")},
			func(t *testing.T, de *heed.DeferredError, _ time.Time, rt *fakeRT) {
				sent := rt.requests()[0].header.Get("X-Request-Key")
				assert.Len(t, sent, 36)
				assert.Equal(t, sent, de.Key)
			}},
		{"Route is the policy's name", heed.Policy{Name: "jobs"}, "GET", 10 * time.Second, 0, []reply{tooMany("Retry-After", "120")},
			func(t *testing.T, de *heed.DeferredError, _ time.Time, _ *fakeRT) {
				assert.Equal(t, "jobs", de.Route)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := withDeadline(t, t.Context(), tt.deadline)
				rt := script(tt.replies...)
				rt.before = func(*http.Request) { time.Sleep(tt.latency) }
				start := time.Now()
				resp, err := heed.New(rt, heed.WithPolicy(exact(tt.policy))).RoundTrip(newRequest(t, ctx, tt.method, "https://api.example/x", nil))
				assert.Nil(t, resp)
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.ErrorIs(t, err, heed.ErrDeferred)
				tt.check(t, de, start, rt)
			})
		})
	}
}
