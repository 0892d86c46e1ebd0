package heed_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
