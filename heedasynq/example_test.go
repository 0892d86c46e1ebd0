// Examples: a worker set up with Configure and Middleware, and what a
// configured Config makes of a deferral.

package heedasynq_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedasynq"
	"github.com/hibiken/asynq"
)

// A worker whose handler calls a rate-limited API through heed: a 429 whose
// wait does not fit the task's time puts the task back until RetryAt,
// without using up a retry, and the create sent again carries the same
// Idempotency-Key: the API honours keys, so its Policy names the header.
func Example() {
	client := &http.Client{Transport: heed.New(nil, heed.WithPolicy(heed.Policy{KeyHeader: "Idempotency-Key"}))}

	cfg := asynq.Config{Concurrency: 10}
	heedasynq.Configure(&cfg) // deferrals wait for RetryAt and are no failure
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: "127.0.0.1:6379"}, cfg)

	mux := asynq.NewServeMux()
	mux.Use(heedasynq.Middleware) // each write keeps its key on every run
	mux.HandleFunc("image:create", func(ctx context.Context, t *asynq.Task) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example/v1/images", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err // a *heed.DeferredError inside: asynq retries at RetryAt
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			return fmt.Errorf("create image: status %d", resp.StatusCode)
		}
		return nil
	})
	if err := srv.Run(mux); err != nil {
		fmt.Println(err)
	}
}

// What a configured server makes of a deferral and of any other error.
func ExampleConfigure() {
	cfg := asynq.Config{
		RetryDelayFunc: func(n int, err error, t *asynq.Task) time.Duration { return 10 * time.Second },
	}
	heedasynq.Configure(&cfg)

	deferred := fmt.Errorf("create image: %w", &heed.DeferredError{RetryAt: time.Now().Add(-time.Minute)})
	flaky := errors.New("connection reset")
	fmt.Println(cfg.IsFailure(deferred), cfg.RetryDelayFunc(0, deferred, nil))
	fmt.Println(cfg.IsFailure(flaky), cfg.RetryDelayFunc(0, flaky, nil))
	// Output:
	// false 1ns
	// true 10s
}
