package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/heed-go/heed"
	"go.uber.org/zap"
)

// demo plays a worker's story against a fake media API: one job, a first
// run deferred by a 429 that asks for a longer wait than the worker takes
// in process, a second run that comes too early and touches nothing, and a
// third, after the stored time, that finishes the job.
func demo(ctx context.Context, out io.Writer, log *zap.Logger) error {
	fake := newFakeAPI()
	defer fake.Close()
	dir, err := os.MkdirTemp("", "heed-mediajob-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := OpenStore(filepath.Join(dir, "jobs.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := store.Add(ctx, "a red fox running through snow, 4 seconds"); err != nil {
		return err
	}

	fake.Throttle(2 * time.Second) // the first status check gets 429, Retry-After: 2
	// The demo's status policy waits at most 1s in process.
	status := statusPolicy
	status.MaxWait = time.Second
	runs := []string{
		"run 1: create, then a 429 asks for 2s, more than the worker waits in process (MaxWait 1s)",
		"run 2, at once: nothing is due yet",
		"run 3, after the stored time: follow the job to the end",
	}
	for i, r := range runs {
		if i == 2 {
			if err := waitUntil(ctx, out, store); err != nil {
				return err
			}
		}
		fmt.Fprintln(out, r)
		before := len(fake.Requests())
		sum, err := runOnce(ctx, store, fake.URL(), status, out, log)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "   requests: %d; claimed %d, succeeded %d, deferred %d\n", len(fake.Requests())-before, sum.Claimed, sum.Succeeded, sum.Deferred)
	}
	early := 0
	for _, r := range fake.Requests() {
		if r.Early() {
			early++
		}
	}
	fmt.Fprintf(out, "jobs created by the API: %d; requests earlier than the API asked: %d\n", fake.Created(), early)
	return nil
}

// runOnce is one run of the worker with its own API client and a deadline
// of its own, as a separate process would be.
func runOnce(ctx context.Context, store *Store, baseURL string, status heed.Policy, out io.Writer, log *zap.Logger) (Summary, error) {
	api, err := NewAPI(baseURL, "demo-token", createPolicy, status, log)
	if err != nil {
		return Summary{}, err
	}
	defer api.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w := &Worker{Store: store, API: api, Out: indent{out}}
	w.Poller.MinWait = 100 * time.Millisecond
	w.Poller.Logger = log
	return w.Run(ctx)
}

// waitUntil waits for the next due job, as a scheduler would.
func waitUntil(ctx context.Context, out io.Writer, store *Store) error {
	at, ok, err := store.nextDue(ctx)
	if err != nil || !ok {
		return err
	}
	d := time.Until(at)
	fmt.Fprintf(out, "(a scheduler waits %s, until the stored retry_at)\n", d.Round(time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// indent prefixes each write with three spaces.
type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(i.w, "   %s", p); err != nil {
		return 0, err
	}
	return len(p), nil
}
