// Command mediajob is a worker for a media-generation API: it creates each
// job with POST and an Idempotency-Key, keeps the job's id, and follows the
// job with jobpoll until it succeeds or fails.
//
// Jobs live in SQLite (modernc.org/sqlite, a file given by -db). When heed
// defers (the API asked for a wait longer than this run may take) or the
// run's deadline passes while a job is still running, the worker stores the
// job with the time it may be touched again and exits. A later run claims
// only jobs whose time has come. A create whose answer was lost is
// reconciled by its key (GET /v1/jobs?idempotency_key=...), never by
// creating again.
//
// Without -base-url it plays the whole story against a fake API on
// 127.0.0.1: a first run deferred by a 429, a second run too early that
// touches nothing, and a third that finishes the job. With -base-url it is
// one run of the worker: -prompt adds jobs first, MEDIA_API_TOKEN is the
// bearer token, and it exits 75 (EX_TEMPFAIL) after printing
// "retry-at <RFC 3339>" when jobs are left for later.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

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
	exitDeferred = 75 // EX_TEMPFAIL: jobs are left; run again at the printed retry-at
)

// prompts collects repeated -prompt flags.
type prompts []string

func (p *prompts) String() string     { return fmt.Sprint(*p) }
func (p *prompts) Set(s string) error { *p = append(*p, s); return nil }

// run is the program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mediajob", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("base-url", "", "media API base URL (empty: play the demo against a local fake)")
	dbPath := fs.String("db", "mediajob.db", "SQLite file holding the jobs")
	deadline := fs.Duration("deadline", 2*time.Minute, "time this run may take, waits included")
	verbose := fs.Bool("v", false, "log each heed and jobpoll decision to stderr")
	var add prompts
	fs.Var(&add, "prompt", "enqueue a job for this prompt before running (repeatable)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	log := zap.NewNop()
	if *verbose {
		log = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(stderr), zap.DebugLevel))
	}

	if *baseURL == "" {
		if err := demo(ctx, stdout, log); err != nil {
			fmt.Fprintln(stderr, "mediajob:", err)
			return exitFailed
		}
		return exitOK
	}

	store, err := OpenStore(*dbPath)
	if err != nil {
		fmt.Fprintln(stderr, "mediajob:", err)
		return exitFailed
	}
	defer store.Close()
	for _, p := range add {
		if _, err := store.Add(ctx, p); err != nil {
			fmt.Fprintln(stderr, "mediajob:", err)
			return exitFailed
		}
	}
	api, err := NewAPI(*baseURL, os.Getenv("MEDIA_API_TOKEN"), createPolicy, statusPolicy, log)
	if err != nil {
		fmt.Fprintln(stderr, "mediajob:", err)
		return exitUsage
	}
	defer api.Close()
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()
	w := &Worker{Store: store, API: api, Out: stdout}
	w.Poller.Logger = log
	sum, err := w.Run(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "mediajob:", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "claimed %d, succeeded %d, failed %d, deferred %d\n", sum.Claimed, sum.Succeeded, sum.Failed, sum.Deferred)
	if !sum.NextDue.IsZero() {
		fmt.Fprintf(stdout, "retry-at %s\n", sum.NextDue.UTC().Format(time.RFC3339))
		return exitDeferred
	}
	return exitOK
}
