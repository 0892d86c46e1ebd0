// Command upload delivers generated images to object storage through the
// AWS SDK for Go v2 S3 client, with heed as the transport of its HTTP
// client and the SDK's retryer off.
//
// Each image goes to a stable, tenant-scoped key,
// tenants/{tenant}/jobs/{job}/image.png. The uploader checks with HEAD
// before it PUTs, generates an image only when none is staged, and keeps
// the staged file until the store confirms it: a 429 or 503 SlowDown is
// retried by heed with the same bytes, never by generating again. A billing
// or trial rejection (402, 403 AccountProblem) stops at once and shows the
// store's body. Tenant and job ids outside a strict allowlist are refused
// before any request.
//
// Without -endpoint it runs a demo against a fake S3 on 127.0.0.1. With
// -endpoint it delivers one job's image to a real S3-compatible store,
// using AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; the placeholder
// generator stands in for an image model. A deferral prints
// "retry-at <RFC 3339>" and exits 75 (EX_TEMPFAIL).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	fs := flag.NewFlagSet("upload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("endpoint", "", "S3 or S3-compatible endpoint URL, path-style (empty: run the demo against a local fake)")
	region := fs.String("region", "us-east-1", "signing region")
	bucket := fs.String("bucket", "", "bucket (with -endpoint)")
	tenant := fs.String("tenant", "", "tenant id (with -endpoint)")
	job := fs.String("job", "", "job id (with -endpoint)")
	stage := fs.String("stage", filepath.Join(os.TempDir(), "heed-upload-stage"), "directory of staged images")
	deadline := fs.Duration("deadline", time.Minute, "time allowed for the delivery, retries and waits included")
	verbose := fs.Bool("v", false, "log each heed decision to stderr")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	log := zap.NewNop()
	if *verbose {
		log = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(stderr), zap.DebugLevel))
	}
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()

	if *endpoint == "" {
		if err := demo(ctx, stdout, log); err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailed
		}
		return exitOK
	}
	if *bucket == "" || *tenant == "" || *job == "" {
		fmt.Fprintln(stderr, "upload: -bucket, -tenant and -job are required with -endpoint")
		return exitUsage
	}
	u := NewUploader(Config{
		Endpoint: *endpoint, Region: *region, Bucket: *bucket,
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		StageDir: *stage, Generate: placeholder, Policy: defaultPolicy, Log: log,
	})
	defer u.Close()
	d, err := u.Deliver(ctx, *tenant, *job)
	var deferred *heed.DeferredError
	switch {
	case err == nil && d.Already:
		fmt.Fprintf(stdout, "already there: %s\n", d.Key)
		return exitOK
	case err == nil:
		fmt.Fprintf(stdout, "delivered %d bytes to %s\n", d.Bytes, d.Key)
		return exitOK
	case errors.As(err, &deferred):
		fmt.Fprintln(stderr, err)
		fmt.Fprintf(stdout, "retry-at %s\n", deferred.RetryAt.UTC().Format(time.RFC3339))
		return exitDeferred
	case errors.Is(err, ErrRefused):
		fmt.Fprintln(stderr, "upload:", err)
		return exitUsage
	}
	fmt.Fprintln(stderr, "upload:", err)
	return exitFailed
}
