package sdkdemo

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// testProgram is a Program whose demo and live call return the given
// errors; its live call prints "done" and records the deadline it saw.
func testProgram(demoErr, connectErr, callErr error, deadline *time.Duration, closed *bool) Program {
	return Program{
		Name:    "prog",
		BaseURL: "Prog API base URL",
		Flags: func(fs *flag.FlagSet) Connect {
			word := fs.String("word", "done", "what to print")
			return func(string, *zap.Logger) (Live, error) {
				if connectErr != nil {
					return Live{}, connectErr
				}
				do := func(ctx context.Context) (string, error) {
					if d, ok := ctx.Deadline(); ok {
						*deadline = time.Until(d)
					}
					return *word, callErr
				}
				return Live{Do: do, Close: func() { *closed = true }}, nil
			}
		},
		Demo: func(_ context.Context, out io.Writer, _ *zap.Logger) error {
			fmt.Fprintln(out, "demo played")
			return demoErr
		},
		Describe: func(err error) string { return Describe(err, Deferral) },
	}
}

func TestRunExitCodes(t *testing.T) {
	retryAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	deferral := &url.Error{Op: "Post", URL: "http://x", Err: &heed.DeferredError{RetryAt: retryAt, Reason: "rate limited", Status: 429, Attempts: 1}}
	for _, tc := range []struct {
		name                      string
		args                      []string
		demoErr, connErr, callErr error
		code                      int
		stdout, stderr            string
		closed                    bool
	}{
		{"bare plays the demo", nil, nil, nil, nil, ExitOK, "demo played\n", "", false},
		{"a failed demo", nil, errors.New("boom"), nil, nil, ExitFailed, "demo played\n", "prog: boom\n", false},
		{"a bad flag", []string{"-nope"}, nil, nil, nil, ExitUsage, "", "flag provided but not defined: -nope", false},
		{"a refused connect", []string{"-base-url", "http://x"}, nil, errors.New("KEY is not set"), nil, ExitUsage, "", "prog: KEY is not set\n", false},
		{"a live call", []string{"-base-url", "http://x", "-word", "hi"}, nil, nil, nil, ExitOK, "hi\n", "", true},
		{"a deferral", []string{"-base-url", "http://x"}, nil, nil, deferral, ExitDeferred, "retry-at 2030-01-02T02:04:05Z\n", "deferred: rate limited (status 429) after 1 attempt(s)", true},
		{"a failure", []string{"-base-url", "http://x"}, nil, nil, errors.New("gone"), ExitFailed, "", "failed: gone\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var deadline time.Duration
			var closed bool
			var out, errOut bytes.Buffer

			code := testProgram(tc.demoErr, tc.connErr, tc.callErr, &deadline, &closed).Run(context.Background(), tc.args, &out, &errOut)

			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.stdout, out.String())
			if tc.stderr == "" {
				assert.Empty(t, errOut.String())
			} else {
				assert.Contains(t, errOut.String(), tc.stderr)
			}
			assert.Equal(t, tc.closed, closed, "the live client is closed after its call")
			if tc.closed {
				assert.InDelta(t, 30*time.Second, deadline, float64(time.Second), "-deadline defaults to 30s")
			}
		})
	}
}

func TestRunDeadlineAndVerbose(t *testing.T) {
	var deadline time.Duration
	var closed bool
	var out, errOut bytes.Buffer
	p := testProgram(nil, nil, nil, &deadline, &closed)
	p.Flags = func(fs *flag.FlagSet) Connect {
		return func(_ string, log *zap.Logger) (Live, error) {
			log.Info("decision")
			return Live{Do: func(ctx context.Context) (string, error) {
				d, ok := ctx.Deadline()
				require.True(t, ok)
				deadline = time.Until(d)
				return "ok", nil
			}}, nil
		}
	}

	code := p.Run(context.Background(), []string{"-base-url", "http://x", "-deadline", "3s", "-v"}, &out, &errOut)

	require.Equal(t, ExitOK, code, errOut.String())
	assert.InDelta(t, 3*time.Second, deadline, float64(time.Second))
	assert.Contains(t, errOut.String(), "decision", "-v logs to stderr")
}

func TestRequireEnv(t *testing.T) {
	t.Setenv("SDKDEMO_TEST_KEY", "")
	_, err := RequireEnv("SDKDEMO_TEST_KEY")
	assert.EqualError(t, err, "SDKDEMO_TEST_KEY is not set")
	t.Setenv("SDKDEMO_TEST_KEY", "k")
	v, err := RequireEnv("SDKDEMO_TEST_KEY")
	require.NoError(t, err)
	assert.Equal(t, "k", v)
}
