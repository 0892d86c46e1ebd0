package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed"
	"go.uber.org/zap"
)

// demo delivers images to a loopback fake S3 and reports each case.
func demo(ctx context.Context, out io.Writer, log *zap.Logger) error {
	fake := newFakeS3(false)
	defer fake.Close()
	stage, err := os.MkdirTemp("", "heed-upload-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)

	var generated atomic.Int32
	policy := defaultPolicy
	policy.Backoff = heed.EqualJitter(100*time.Millisecond, time.Second)
	u := NewUploader(Config{
		Endpoint: fake.URL(), Region: "us-east-1", Bucket: "images",
		AccessKey: "AKIDEXAMPLE", SecretKey: "secret", StageDir: stage,
		Generate: func(ctx context.Context, tenant, job string) ([]byte, error) {
			generated.Add(1)
			return placeholder(ctx, tenant, job)
		},
		Policy: policy, Log: log,
	})
	defer u.Close()

	step := func(title, tenant, job string) {
		before, gen := len(fake.Requests()), generated.Load()
		d, err := u.Deliver(ctx, tenant, job)
		fmt.Fprintf(out, "%s\n   ", title)
		switch {
		case err != nil:
			fmt.Fprintf(out, "error: %v", err)
		case d.Already:
			fmt.Fprintf(out, "already there: %s", d.Key)
		default:
			fmt.Fprintf(out, "delivered %d bytes to %s", d.Bytes, d.Key)
		}
		fmt.Fprintf(out, "\n   requests: %d, images generated: %d\n", len(fake.Requests())-before, generated.Load()-gen)
	}

	fake.FailPuts(slowDown())
	step("1. a 503 SlowDown is retried with the same staged bytes", "acme", "job-1")
	step("2. the same job again: HEAD finds it, nothing is generated or sent", "acme", "job-1")
	fake.FailPuts(trialExpired())
	step("3. a 402 from the store stops at once and shows its body", "globex", "job-7")
	step("4. a tenant id with path traversal is refused before any byte moves", "../acme", "job-1")

	if n := len(fake.Objects()); n != 1 {
		return errors.New("demo: expected exactly one object")
	}
	return nil
}
