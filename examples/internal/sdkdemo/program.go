// Package sdkdemo is what the vendor-SDK example programs share: one
// command line (-base-url, -deadline, -v), the demo played against a
// loopback fake when -base-url is empty, one live call otherwise, and the
// exit codes, with a deferral printed as "retry-at <RFC 3339>" and exit 75.
//
// This file holds the program: its flags and its run-to-exit-code logic.
package sdkdemo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/heed-go/heed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Exit codes of every program.
const (
	ExitOK       = 0  // the demo ran, or the live call succeeded
	ExitFailed   = 1  // the demo or the live call failed
	ExitUsage    = 2  // bad flags or environment
	ExitDeferred = 75 // EX_TEMPFAIL: try again at the printed retry-at
)

// RunFunc is a program's run: arguments and output streams in, exit code
// out. Program.Run and Prompt.Run are RunFuncs.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Main runs run with the process's arguments and streams and exits with
// its code.
func Main(run RunFunc) { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// Program is one example program. Name, Flags, Demo and Describe are
// required. A Program keeps no state between runs: Run may be called again
// and from several goroutines, if its funcs allow it.
type Program struct {
	// Name names the flag set and prefixes the messages on stderr.
	Name string
	// BaseURL is the start of -base-url's usage, e.g. "OpenAI API base
	// URL, e.g. https://api.openai.com/v1"; Run appends what empty means.
	BaseURL string
	// Flags registers the program's own flags on fs, before parsing, and
	// returns how to make its live call from them once parsed.
	Flags func(fs *flag.FlagSet) Connect
	// Demo plays the program's story against loopback fakes; it runs
	// when -base-url is empty. An error exits ExitFailed.
	Demo func(ctx context.Context, out io.Writer, log *zap.Logger) error
	// Describe says what an error of the live call means (see Describe).
	Describe func(error) string
}

// Connect checks a program's flags and environment and makes its client
// for baseURL. An error is a usage error: ExitUsage.
type Connect func(baseURL string, log *zap.Logger) (Live, error)

// Live is a program's one call to the API at -base-url.
type Live struct {
	// Do makes the call under ctx, which carries -deadline, and returns
	// the line to print on success.
	Do func(ctx context.Context) (string, error)
	// Close releases the client afterwards; nil: nothing to release.
	Close func()
}

// Run parses args and runs the program, writing to stdout and stderr, and
// returns the exit code. -deadline (30s) bounds the live call, waits
// included; -v logs each heed decision to stderr. A *heed.DeferredError
// from the live call is described on stderr and printed on stdout as
// "retry-at <RFC 3339 UTC>", with ExitDeferred.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(p.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("base-url", "", p.BaseURL+" (empty: run the demo against a local fake)")
	deadline := fs.Duration("deadline", 30*time.Second, "time allowed for the call, retries and waits included (with -base-url)")
	verbose := fs.Bool("v", false, "log each heed decision to stderr")
	connect := p.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	log := zap.NewNop()
	if *verbose {
		log = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(stderr), zap.DebugLevel))
	}

	if *baseURL == "" {
		if err := p.Demo(ctx, stdout, log); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
			return ExitFailed
		}
		return ExitOK
	}

	live, err := connect(*baseURL, log)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		return ExitUsage
	}
	if live.Close != nil {
		defer live.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()
	line, err := live.Do(ctx)
	var deferred *heed.DeferredError
	switch {
	case err == nil:
		fmt.Fprintln(stdout, line)
		return ExitOK
	case errors.As(err, &deferred):
		fmt.Fprintln(stderr, p.Describe(err))
		fmt.Fprintf(stdout, "retry-at %s\n", deferred.RetryAt.UTC().Format(time.RFC3339))
		return ExitDeferred
	}
	fmt.Fprintln(stderr, p.Describe(err))
	return ExitFailed
}

// RequireEnv returns the value of the environment variable name, or an
// error naming it when it is empty or unset.
func RequireEnv(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is not set", name)
	}
	return v, nil
}
