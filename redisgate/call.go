// Calls: one bounded Redis call, and what the gate does when Redis fails.

package redisgate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// call runs f, one Redis call for op on scope, bounded by the gate's
// timeout. When Redis fails or is late it returns an error at once, and
// warns unless the caller's own context had ended. The first call that
// succeeds after Redis failed, or lacked a script, sets the holds this
// process knows in Redis again, and so does the first a second
// (reassertEvery) after they last were.
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
		if g.local.due(g.now(), g.reassertEvery) {
			g.reassert(ctx)
		}
		return v, nil
	}
	if ctx.Err() != nil {
		return zero, fmt.Errorf("redisgate: %s %q: %w", op, scope, ctx.Err())
	}
	if cctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer from Redis within %v: %w", g.timeout, err)
	}
	g.local.lost.Store(true)
	g.warn.failed(op, scope, err)
	return zero, fmt.Errorf("redisgate: %s %q: %w", op, scope, err)
}

// run runs script on scope's hash with args, by its hash, or by its source
// when Redis lacks it. A Redis that lacks a script may have lost the
// holds too (it restarted, or another server took over): the holds this
// process knows are set again when the call succeeds.
func (g *gate) run(ctx context.Context, script *redis.Script, scope string, args []any) *redis.Cmd {
	keys := []string{g.key(scope), g.paceKey(scope), g.contactKey(scope)}
	cmd := script.EvalSha(ctx, g.client, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		g.local.lost.Store(true)
		return script.Eval(ctx, g.client, keys, args...)
	}
	return cmd
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
