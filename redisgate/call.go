package redisgate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// call runs f, one Redis call for op on scope, bounded by the gate's
// timeout. When Redis fails or is late it returns an error at once, and
// warns unless the caller's own context had ended.
func call[T any](g *gate, ctx context.Context, op, scope string, f func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("redisgate: %s %q: %w", op, scope, err)
	}
	cctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	v, err := bound(g.bounded, cctx, f)
	if err == nil {
		g.warn.ok()
		return v, nil
	}
	if ctx.Err() != nil {
		return zero, fmt.Errorf("redisgate: %s %q: %w", op, scope, ctx.Err())
	}
	if cctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer from Redis within %v: %w", g.timeout, err)
	}
	g.warn.failed(op, scope, err)
	return zero, fmt.Errorf("redisgate: %s %q: %w", op, scope, err)
}

// bound runs f with ctx, and returns by ctx's deadline even when the client
// does not honour it: f then goes on in the background, until the client's
// own timeouts end it.
func bound[T any](bounded bool, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	if bounded {
		return f(ctx)
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f(ctx)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// honoursContext reports whether client's calls end at their context's
// deadline: go-redis clients do when ContextTimeoutEnabled is set.
func honoursContext(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}
