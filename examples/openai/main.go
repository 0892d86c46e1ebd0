// Command openai calls the OpenAI API through the official Go SDK
// (github.com/openai/openai-go/v3) with heed as the transport of its
// *http.Client and the SDK's own retries turned off.
//
// Without -base-url it starts a fake OpenAI server on 127.0.0.1 and shows
// three cases: a rate-limit 429 waited out exactly as long as retry-after-ms
// asked, an insufficient_quota 429 that stops after one request, and a wait
// longer than the deadline, returned at once as a *heed.DeferredError found
// with errors.As through the SDK's error.
//
// With -base-url (for example https://api.openai.com/v1) it sends one chat
// completion with the key in OPENAI_API_KEY. A deferral prints
// "retry-at <RFC 3339>" and exits 75 (EX_TEMPFAIL), as `heed get` does.
package main

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

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitDeferred = 75 // EX_TEMPFAIL: try again at the printed retry-at
)

// run is the program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("openai", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("base-url", "", "OpenAI API base URL, e.g. https://api.openai.com/v1 (empty: run the demo against a local fake)")
	model := fs.String("model", "gpt-4o-mini", "model to ask")
	prompt := fs.String("prompt", "Say hello in five words.", "what to ask (with -base-url)")
	deadline := fs.Duration("deadline", 30*time.Second, "time allowed for the call, retries and waits included (with -base-url)")
	verbose := fs.Bool("v", false, "log each heed decision to stderr")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	log := zap.NewNop()
	if *verbose {
		log = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(stderr), zap.DebugLevel))
	}

	if *baseURL == "" {
		demo(ctx, stdout, log, *model)
		return exitOK
	}

	key := os.Getenv("OPENAI_API_KEY")
	if key == "" {
		fmt.Fprintln(stderr, "openai: OPENAI_API_KEY is not set")
		return exitUsage
	}
	c := newClient(*baseURL, key, log)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()
	text, err := c.ask(ctx, *model, *prompt)
	var deferred *heed.DeferredError
	switch {
	case err == nil:
		fmt.Fprintln(stdout, text)
		return exitOK
	case errors.As(err, &deferred):
		fmt.Fprintln(stderr, describe(err))
		fmt.Fprintf(stdout, "retry-at %s\n", deferred.RetryAt.UTC().Format(time.RFC3339))
		return exitDeferred
	}
	fmt.Fprintln(stderr, describe(err))
	return exitFailed
}
