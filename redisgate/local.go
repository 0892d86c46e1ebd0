// The local gate: what this process knows of its scopes beside Redis.

package redisgate

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heed-go/heed"
)

// local is what this process knows of its scopes beside Redis: a
// heed.NewGate that every hold and published quota is written to as well,
// which answers while Redis fails, and the holds this process was told,
// which it sets in Redis again when Redis may have lost them.
type local struct {
	gate heed.QuotaGate // heed.NewGate(): it forgets idle scopes itself

	mu    sync.Mutex
	holds map[string]int64 // scope: the end of its hold, in Unix milliseconds
	sweep int              // forget the holds that are over when holds grows to this

	// lost says that Redis may have lost holds: a call failed, or Redis
	// lacked a script the gate runs (it restarted, or another server took
	// over). The next call that succeeds sets the holds again.
	lost atomic.Bool
	// next is when, in Unix milliseconds, a call that succeeds sets the
	// holds again all the same: a Redis that restarted while the process
	// was idle, and whose scripts another process loaded, says nothing of
	// it to a client that reconnects.
	next atomic.Int64
}

// reassertEvery is how often, at most, the holds a process knows are set
// in Redis again when Redis has not been seen to lose them.
const reassertEvery = time.Second

// due reports whether a call that succeeded at now is to set the holds in
// Redis again: Redis may have lost them, or every has passed since they
// last were. Of the calls at one occasion, one is told.
func (l *local) due(now time.Time, every time.Duration) bool {
	ms := now.UnixMilli()
	if l.lost.Load() && l.lost.CompareAndSwap(true, false) {
		l.next.Store(ms + every.Milliseconds())
		return true
	}
	next := l.next.Load()
	return ms >= next && l.next.CompareAndSwap(next, ms+every.Milliseconds())
}

// minSweep is the least size of the holds at which those that are over are
// forgotten.
const minSweep = 64

func newLocal() *local {
	return &local{gate: heed.NewGate().(heed.QuotaGate), holds: make(map[string]int64), sweep: minSweep}
}

// hold records that scope is held until ms, if that is later than its
// hold, at now (both Unix milliseconds). Holds that are over are
// forgotten as the record grows: it keeps at most twice as many as are
// not over, or minSweep.
func (l *local) hold(scope string, ms, now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	had, ok := l.holds[scope]
	if ms <= had {
		return
	}
	if !ok && len(l.holds) >= l.sweep {
		for s, until := range l.holds {
			if until <= now {
				delete(l.holds, s)
			}
		}
		l.sweep = max(minSweep, 2*len(l.holds))
	}
	l.holds[scope] = ms
}

// heldUntil returns the end of scope's hold, or 0 when it has none at now.
func (l *local) heldUntil(scope string, now int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms, ok := l.holds[scope]
	if ok && ms <= now {
		delete(l.holds, scope)
		return 0
	}
	return ms
}

// held returns the holds that are not over at now.
func (l *local) held(now int64) map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := make(map[string]int64, len(l.holds))
	for s, until := range l.holds {
		if until <= now {
			delete(l.holds, s)
		} else {
			held[s] = until
		}
	}
	return held
}

// done tells the local gate of the answer to s, a send of scope: the
// answer to a send it admitted, or, when it has none of scope in flight,
// the quota a response published (it then counts no send). An answer to a
// send Redis admitted while the local gate has sends in flight is not
// told: the local gate would count one of its own answered.
func (g *gate) localDone(ctx context.Context, scope string, s taken, q *heed.Quota, served bool) {
	if s.local || (q != nil && !g.inFlight.hasLocal(scope)) {
		_ = g.local.gate.Done(ctx, scope, q, served) // heed.NewGate's never fails
	}
}

// reassert sets in Redis every hold this process knows that is not over,
// in one pipeline, within the gate's timeout. When that fails, the next
// call that succeeds tries again. Setting a hold Redis has changes
// nothing.
func (g *gate) reassert(ctx context.Context) {
	now := g.now()
	held := g.local.held(now.UnixMilli())
	if len(held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	defer cancel()
	_, err := bound(g.bounded, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.holdAll(ctx, now, held)
	})
	if err != nil {
		g.local.lost.Store(true)
		g.warn.failed("set the holds again", "", err)
	}
}

// holdAll runs the hold script for every scope of held, by its hash, and
// by its source for the scopes whose Redis node lacks it.
func (g *gate) holdAll(ctx context.Context, now time.Time, held map[string]int64) error {
	scopes := make([]string, 0, len(held))
	for s := range held {
		scopes = append(scopes, s)
	}
	for _, eval := range []bool{false, true} {
		cmds := make([]*redis.Cmd, len(scopes))
		_, _ = g.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, s := range scopes {
				keys, args := []string{g.key(s)}, g.argsHeld(now, held[s])
				if eval {
					cmds[i] = holdScript.Eval(ctx, p, keys, args...)
				} else {
					cmds[i] = holdScript.EvalSha(ctx, p, keys, args...)
				}
			}
			return nil
		})
		var missing []string
		for i, cmd := range cmds {
			switch err := cmd.Err(); {
			case err == nil:
			case !eval && redis.HasErrorPrefix(err, "NOSCRIPT"):
				missing = append(missing, scopes[i])
			default:
				return err
			}
		}
		if len(missing) == 0 {
			return nil
		}
		scopes = missing
	}
	return nil
}
