// The functions Configure installs: deferrals wait for RetryAt and are no
// failure; every other error goes to the user's functions or asynq's.

package heedasynq_test

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedasynq"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deferredUntil returns a deferral eligible again at retryAt, wrapped as
// http.Client and a handler would wrap it.
func deferredUntil(retryAt time.Time) error {
	d := &heed.DeferredError{Method: "POST", URL: "http://api.example/v1/images", Reason: "rate limited", RetryAt: retryAt}
	return fmt.Errorf("create image: %w", &url.Error{Op: "Post", URL: d.URL, Err: d})
}

// ceilSecond returns t rounded up to a whole second.
func ceilSecond(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

func TestRetryDelay(t *testing.T) {
	errFlaky := errors.New("flaky")
	type call struct {
		n   int
		err error
	}
	userDelay := func(calls *[]call) asynq.RetryDelayFunc {
		return func(n int, e error, _ *asynq.Task) time.Duration {
			*calls = append(*calls, call{n, e})
			return 7 * time.Second
		}
	}
	tests := []struct {
		name     string
		user     bool // the Config holds a RetryDelayFunc of the user's
		err      func(now time.Time) error
		wantUser bool
		// check tests the delay d returned between before and after.
		check func(t *testing.T, d time.Duration, before, after time.Time, err error)
	}{
		{
			name: "deferral: the first whole second at or after RetryAt",
			user: true,
			err:  func(now time.Time) error { return deferredUntil(now.Add(1300 * time.Millisecond)) },
			check: func(t *testing.T, d time.Duration, before, after time.Time, err error) {
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				at := ceilSecond(de.RetryAt)
				// asynq adds d to a clock read after ours and truncates to the second.
				assert.False(t, time.Unix(after.Add(d).Unix(), 0).Before(de.RetryAt), "asynq would run it before RetryAt")
				assert.False(t, before.Add(d).After(at), "waits past the second RetryAt falls in")
			},
		},
		{
			name: "deferral at a whole second",
			err: func(now time.Time) error {
				return deferredUntil(now.Truncate(time.Second).Add(2 * time.Second))
			},
			check: func(t *testing.T, d time.Duration, before, after time.Time, err error) {
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.False(t, time.Unix(after.Add(d).Unix(), 0).Before(de.RetryAt))
				assert.False(t, before.Add(d).After(de.RetryAt), "waits past RetryAt")
			},
		},
		{
			name: "deferral already eligible: the smallest positive delay",
			user: true,
			err:  func(now time.Time) error { return deferredUntil(now.Add(-time.Hour)) },
			check: func(t *testing.T, d time.Duration, _, _ time.Time, _ error) {
				assert.Equal(t, time.Nanosecond, d)
			},
		},
		{
			name: "deferral with no RetryAt",
			err:  func(time.Time) error { return &heed.DeferredError{} },
			check: func(t *testing.T, d time.Duration, _, _ time.Time, _ error) {
				assert.Equal(t, time.Nanosecond, d)
			},
		},
		{
			name:     "other error: the user's function",
			user:     true,
			err:      func(time.Time) error { return errFlaky },
			wantUser: true,
			check: func(t *testing.T, d time.Duration, _, _ time.Time, _ error) {
				assert.Equal(t, 7*time.Second, d)
			},
		},
		{
			name:     "heed error that is no deferral: the user's function",
			user:     true,
			err:      func(time.Time) error { return fmt.Errorf("wrapped: %w", heed.ErrDeferred) },
			wantUser: true,
			check: func(t *testing.T, d time.Duration, _, _ time.Time, _ error) {
				assert.Equal(t, 7*time.Second, d, "no *DeferredError, so no RetryAt to wait for")
			},
		},
		{
			name: "other error, no function of the user's: asynq's default",
			err:  func(time.Time) error { return errFlaky },
			check: func(t *testing.T, d time.Duration, _, _ time.Time, _ error) {
				// asynq.DefaultRetryDelayFunc(2, ...) is 2⁴ + 15 s plus 3 × up to 29 s.
				assert.GreaterOrEqual(t, d, 31*time.Second)
				assert.LessOrEqual(t, d, 118*time.Second)
				assert.Zero(t, d%time.Second)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []call
			var cfg asynq.Config
			if tt.user {
				cfg.RetryDelayFunc = userDelay(&calls)
			}
			heedasynq.Configure(&cfg)
			before := time.Now()
			err := tt.err(before)
			d := cfg.RetryDelayFunc(2, err, asynq.NewTask("work", nil))
			after := time.Now()
			tt.check(t, d, before, after, err)
			if tt.wantUser {
				assert.Equal(t, []call{{2, err}}, calls, "the user's function is called with asynq's arguments")
			} else {
				assert.Empty(t, calls, "the user's function was called")
			}
		})
	}
}

func TestIsFailure(t *testing.T) {
	errExpected := errors.New("expected outcome")
	// The user's IsFailure: errExpected is no failure; the rest are.
	user := func(err error) bool { return err != nil && !errors.Is(err, errExpected) }
	tests := []struct {
		name string
		user func(error) bool
		err  error
		want bool
	}{
		{"deferral", user, deferredUntil(time.Now().Add(time.Minute)), false},
		{"deferral, no function of the user's", nil, deferredUntil(time.Now().Add(time.Minute)), false},
		{"deferral, a user's function that calls it a failure", func(error) bool { return true }, &heed.DeferredError{}, false},
		{"other error: the user's function", user, errors.New("flaky"), true},
		{"the user's own non-failure", user, fmt.Errorf("wrapped: %w", errExpected), false},
		{"other error, asynq's default", nil, errors.New("flaky"), true},
		{"no error, asynq's default", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := asynq.Config{IsFailure: tt.user}
			heedasynq.Configure(&cfg)
			assert.Equal(t, tt.want, cfg.IsFailure(tt.err))
		})
	}
}

// TestConfigureTwice: configuring an already configured Config changes
// nothing: the user's functions are still called once, deferrals still wait.
func TestConfigureTwice(t *testing.T) {
	var delays, failures int
	cfg := asynq.Config{
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { delays++; return time.Second },
		IsFailure:      func(err error) bool { failures++; return err != nil },
	}
	heedasynq.Configure(&cfg)
	heedasynq.Configure(&cfg)

	flaky := errors.New("flaky")
	assert.Equal(t, time.Second, cfg.RetryDelayFunc(0, flaky, nil))
	assert.True(t, cfg.IsFailure(flaky))
	assert.Equal(t, 1, delays)
	assert.Equal(t, 1, failures)

	retryAt := time.Now().Add(3 * time.Second)
	d := cfg.RetryDelayFunc(0, deferredUntil(retryAt), nil)
	assert.False(t, time.Now().Add(d).Before(retryAt))
	assert.False(t, cfg.IsFailure(deferredUntil(retryAt)))
	assert.Equal(t, 1, delays)
	assert.Equal(t, 1, failures)
}
