// Configure: the asynq server settings under which a heed deferral waits
// for its RetryAt instead of counting as a failure.

package heedasynq

import (
	"errors"
	"time"

	"github.com/heed-go/heed"
	"github.com/hibiken/asynq"
)

// Configure sets cfg.RetryDelayFunc and cfg.IsFailure so that a task whose
// handler returns an error wrapping a *heed.DeferredError runs again no
// earlier than its RetryAt and is not counted as a failure: asynq then
// neither increments the task's Retried count nor records it in the
// queue's processed and failed stats. Every other error goes to the
// functions cfg held before, or to asynq's defaults when they were nil
// (asynq.DefaultRetryDelayFunc; any non-nil error is a failure). Call it
// before asynq.NewServer; calling it twice changes nothing more. The
// functions it installs are safe for concurrent use when those it wraps
// are.
func Configure(cfg *asynq.Config) {
	cfg.RetryDelayFunc = retryDelay(cfg.RetryDelayFunc)
	cfg.IsFailure = isFailure(cfg.IsFailure)
}

// retryDelay returns a RetryDelayFunc that waits for a deferral's RetryAt
// and asks fallback (asynq's default when nil) about anything else.
func retryDelay(fallback asynq.RetryDelayFunc) asynq.RetryDelayFunc {
	if fallback == nil {
		fallback = asynq.DefaultRetryDelayFunc
	}
	return func(n int, e error, t *asynq.Task) time.Duration {
		var d *heed.DeferredError
		if errors.As(e, &d) {
			return untilEligible(d.RetryAt, time.Now())
		}
		return fallback(n, e, t)
	}
}

// isFailure returns an IsFailure predicate under which a deferral is no
// failure and anything else is what fallback (asynq's default, err != nil,
// when nil) says.
func isFailure(fallback func(error) bool) func(error) bool {
	if fallback == nil {
		fallback = func(err error) bool { return err != nil }
	}
	return func(err error) bool {
		if errors.Is(err, heed.ErrDeferred) {
			return false
		}
		return fallback(err)
	}
}
