// The demo's scenes: numbered, each call timed under its own deadline.

package sdkdemo

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Title prints the heading of the i-th scene, counted from 0, as
// "1. title".
func Title(out io.Writer, i int, title string) { fmt.Fprintf(out, "%d. %s\n", i+1, title) }

// Timed makes call under ctx bounded by deadline and returns what it
// returned and how long it took, rounded to the millisecond.
func Timed[T any](ctx context.Context, deadline time.Duration, call func(context.Context) (T, error)) (T, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	v, err := call(ctx)
	return v, time.Since(start).Round(time.Millisecond), err
}
