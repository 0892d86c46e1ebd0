package sdkdemo

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/stretchr/testify/assert"
)

// apiError stands for an SDK's own error type.
type apiError struct{ code int }

func (e *apiError) Error() string { return fmt.Sprintf("api %d", e.code) }

func TestDescribe(t *testing.T) {
	api := As(func(e *apiError) string { return fmt.Sprintf("stopped: %d", e.code) })
	retryAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	d := &heed.DeferredError{Reason: "rate limited", Status: 429, Attempts: 1, Wait: 1500 * time.Microsecond * 1000, Left: time.Second, RetryAt: retryAt}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, "ok"},
		{"a deferral inside a *url.Error", &url.Error{Op: "Get", URL: "u", Err: d}, "deferred: rate limited (status 429) after 1 attempt(s); wait 1.5s, 1s left; retry at 2030-01-02T03:04:05Z"},
		{"an API error, wrapped", fmt.Errorf("call: %w", &apiError{409}), "stopped: 409"},
		{"anything else", errors.New("eof"), "failed: eof"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Describe(tc.err, Deferral, api))
		})
	}
}

func TestDescribeFirstReadingWins(t *testing.T) {
	err := &apiError{500}
	first := As(func(*apiError) string { return "first" })
	second := As(func(*apiError) string { return "second" })
	assert.Equal(t, "first", Describe(err, first, second))
}

func ExampleDescribe() {
	err := &url.Error{Op: "Post", URL: "https://api.example.com/v1", Err: &heed.DeferredError{
		Reason: "rate limited", Status: 429, Attempts: 1, Wait: 2 * time.Minute, Left: 30 * time.Second,
		RetryAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
	}}
	fmt.Println(Describe(err, Deferral))
	fmt.Println(Describe(errors.New("connection reset"), Deferral))
	// Output:
	// deferred: rate limited (status 429) after 1 attempt(s); wait 2m0s, 30s left; retry at 2030-01-02T03:04:05Z
	// failed: connection reset
}
