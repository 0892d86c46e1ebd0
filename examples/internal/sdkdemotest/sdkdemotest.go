// Package sdkdemotest holds the checks every vendor-SDK example program's
// tests make the same way: its run played bare, its run deferred against
// a fake, and a deferral seen through the SDK's error.
package sdkdemotest

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RunFunc is a program's run: arguments and output streams in, exit code
// out.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// RunDemo runs run with no arguments, requires sdkdemo.ExitOK (showing
// stderr otherwise), asserts stdout contains each of wants, and returns
// stdout.
func RunDemo(t *testing.T, run RunFunc, wants ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), nil, &out, &errOut)
	require.Equal(t, sdkdemo.ExitOK, code, errOut.String())
	s := out.String()
	for _, want := range wants {
		assert.Contains(t, s, want)
	}
	return s
}

// RunDefers runs run with args and asserts that it exits
// sdkdemo.ExitDeferred having printed exactly one line,
// "retry-at <RFC 3339 UTC>".
func RunDefers(t *testing.T, run RunFunc, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer

	code := run(context.Background(), args, &out, &errOut)

	assert.Equal(t, sdkdemo.ExitDeferred, code, errOut.String())
	assert.Regexp(t, `^retry-at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$`, out.String())
}

// RequireDeferred requires err to be what an SDK returns for heed's
// deferral, the *http.Client's *url.Error around a *heed.DeferredError,
// found by errors.As and errors.Is(heed.ErrDeferred), and returns the
// deferral. msgAndArgs go with the *url.Error check.
func RequireDeferred(t *testing.T, err error, msgAndArgs ...any) *heed.DeferredError {
	t.Helper()
	var urlErr *url.Error
	require.ErrorAs(t, err, &urlErr, msgAndArgs...)
	var deferred *heed.DeferredError
	require.ErrorAs(t, err, &deferred)
	assert.ErrorIs(t, err, heed.ErrDeferred)
	return deferred
}

// Context returns a context with deadline from now, canceled when the
// test ends; with deadline 0, context.Background(): no deadline.
func Context(t *testing.T, deadline time.Duration) context.Context {
	t.Helper()
	if deadline <= 0 {
		return context.Background()
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}
