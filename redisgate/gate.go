// The gate: holds and published quotas kept in Redis for a fleet.

package redisgate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// expiryMargin is how long a scope's hash outlives the last time it needs:
// room for the latency of the call that set it.
const expiryMargin = time.Second

// Horizon is how far ahead of now the gate keeps anything. A hold or a
// quota's reset later than that is kept until the horizon; a time in Redis
// later than that, or a period longer, is read as absent; and no key of
// the gate lives longer. A Transport shares holds and resets only as far
// ahead as heed.WithMaxHold, a day by default.
const Horizon = 7 * 24 * time.Hour

// New returns a heed.Gate kept in Redis through client, which is also a
// heed.QuotaGate: give it to the Transports of every process of a fleet
// with heed.WithGate, and they share their holds and the quotas servers
// publish. Every method fails open: when Redis does not answer within the
// timeout, Take and NotBefore answer from what this process knows, and
// Hold and Done record it there and return an error, which a Transport
// logs (see Failing open in the package doc). New does not call Redis;
// client must not be nil, and stays the caller's to close.
func New(client redis.UniversalClient, opts ...Option) heed.Gate {
	if client == nil {
		panic("redisgate: New with a nil client")
	}
	g := &gate{
		client:   client,
		prefix:   DefaultPrefix,
		timeout:  DefaultTimeout,
		life:     DefaultMaxInFlight,
		margin:   expiryMargin,
		now:      time.Now,
		bounded:  honoursContext(client),
		inFlight: newTakes(),
		local:    newLocal(),
		infer:    true,
		clock:    newFleetClock(),
		contact:  contact{most: DefaultContactInFlight, span: DefaultContactSpan},

		reassertEvery: reassertEvery,
	}
	g.warn.log = zap.NewNop()
	for _, o := range opts {
		if o != nil {
			o.apply(g)
		}
	}
	return g
}

// gate is the Gate New returns.
type gate struct {
	client   redis.UniversalClient
	prefix   string
	timeout  time.Duration
	life     time.Duration // least time a send counts in flight
	infer    bool          // infer quotas (WithInferredQuota)
	contact  contact       // WithFirstContact
	margin   time.Duration
	now      func() time.Time // the wall clock; tests set another
	bounded  bool             // client's calls end at the context's deadline
	warn     warner
	inFlight *takes // the buckets of this process's sends in flight
	local    *local // what this process knows, beside Redis
	clock    *fleetClock

	reassertEvery time.Duration // tests set another
}

var _ heed.QuotaGate = (*gate)(nil)

// key returns the name of scope's hash: the prefix, then the scope in
// braces with its braces and percent signs percent-encoded. No two
// prefix and scope pairs share a name (the name ends in the only brace
// pair the scope adds), and in a Redis Cluster, unless the prefix has a
// hash tag of its own, the scope is the name's hash tag.
func (g *gate) key(scope string) string {
	return g.prefix + "{" + keyEscaper.Replace(scope) + "}"
}

var keyEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// args returns the arguments every script takes first, at now, for scope,
// and more.
func (g *gate) args(now time.Time, scope string, more ...any) []any {
	return g.argsHeld(now, g.local.heldUntil(scope, now.UnixMilli()), more...)
}

// argsHeld returns the arguments every script takes first, at now, for a
// scope this process knows held until held (Unix milliseconds; 0: not
// held), and more.
func (g *gate) argsHeld(now time.Time, held int64, more ...any) []any {
	return append([]any{g.nowToRedis(now.UnixMilli()), g.life.Milliseconds(), g.margin.Milliseconds(), Horizon.Milliseconds(), g.endToRedis(held)}, more...)
}

// NotBefore returns the scope's hold or, when its published quota is spent,
// the quota's reset, if that is later. When Redis fails, it returns what
// this process knows.
func (g *gate) NotBefore(ctx context.Context, scope string) (time.Time, error) {
	g.sync(ctx)
	now := g.now()
	nb, err := call(g, ctx, "not before", scope, func(ctx context.Context) (int64, error) {
		return g.run(ctx, notBeforeScript, scope, g.args(now, scope)).Int64()
	})
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, err
		}
		return g.local.gate.NotBefore(ctx, scope)
	}
	return unixMilli(g.endFromRedis(nb)), nil
}

// Hold sets the scope's hold to until, rounded up to the millisecond and
// at most Horizon ahead, if that is later than the one it has. The hold is
// kept in this process too: an error says that Redis did not get it.
func (g *gate) Hold(ctx context.Context, scope string, until time.Time) error {
	now := g.now()
	if !until.After(now) {
		return nil
	}
	g.sync(ctx)
	until = time.UnixMilli(upHorizon(now, until))
	g.local.hold(scope, until.UnixMilli(), now.UnixMilli())
	_ = g.local.gate.Hold(ctx, scope, until) // heed.NewGate's never fails
	_, err := call(g, ctx, "hold", scope, func(ctx context.Context) (int64, error) {
		return g.run(ctx, holdScript, scope, g.args(now, scope)).Int64()
	})
	return err
}

// Take admits one send of scope and returns the zero time, or returns the
// time to ask again: the scope's hold, or its spent quota's reset, or a
// recheck 10ms ahead while sends set against that quota are
// unanswered (heed.QuotaGate). When Redis fails, the local gate, which
// knows this process's holds and the quotas its responses published,
// answers instead.
func (g *gate) Take(ctx context.Context, scope string) (time.Time, error) {
	g.sync(ctx)
	now := g.now()
	res, err := call(g, ctx, "take", scope, func(ctx context.Context) ([]int64, error) {
		return g.run(ctx, takeScript, scope, g.args(now, scope, rules.QuotaRecheck.Milliseconds(), g.inferArg(), rules.InferProbe,
			g.contact.most, g.contact.span.Milliseconds(), contactKeep.Milliseconds())).Int64Slice()
	})
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, err
		}
		at, _ := g.local.gate.Take(ctx, scope) // heed.NewGate's never fails
		if at.IsZero() {
			g.admitted(ctx, scope, taken{bucket: g.nowToRedis(now.UnixMilli()) / g.life.Milliseconds(), episode: -1, local: true})
		}
		return at, nil
	}
	if len(res) != 3 {
		return time.Time{}, fmt.Errorf("redisgate: take %q: unexpected reply %v", scope, res)
	}
	if res[0] > 0 {
		return time.UnixMilli(g.endFromRedis(res[0])), nil
	}
	g.admitted(ctx, scope, taken{bucket: res[1], episode: res[2]})
	return time.Time{}, nil
}

// admitted records s, a send of scope, and tells the local gate of the
// sends it admitted whose record that forgot.
func (g *gate) admitted(ctx context.Context, scope string, s taken) {
	for range g.inFlight.add(scope, s) {
		_ = g.local.gate.Done(ctx, scope, nil, false)
	}
}

// inferArg tells the take script whether to infer quotas.
func (g *gate) inferArg() int {
	if g.infer {
		return 1
	}
	return 0
}

// Done records that a send Take admitted was answered, with the quota its
// response published, if q is not nil (its reset at most Horizon ahead),
// and whether it was served. Which of this process's sends it answers is
// not known: the oldest is taken to. It does so even when ctx has ended,
// within the gate's timeout: a send whose caller gave up is answered all
// the same, and until Redis hears of it, sends refused by a spent quota
// would go on rechecking for it. The local gate hears of it too: an error
// says that Redis did not.
func (g *gate) Done(ctx context.Context, scope string, q *heed.Quota, served bool) error {
	ctx = context.WithoutCancel(ctx)
	g.sync(ctx)
	now := g.now()
	sent := g.inFlight.remove(scope)
	var has, remaining, reset, ok int64
	if q != nil {
		has, remaining, reset = 1, q.Remaining, upHorizon(now, q.Reset)
		q = &heed.Quota{Remaining: q.Remaining, Reset: time.UnixMilli(reset)}
	}
	if served {
		ok = 1
	}
	g.localDone(ctx, scope, sent, q, served)
	bucket, episode := sent.bucket, sent.episode
	if sent.local {
		bucket, episode = none.bucket, none.episode
	}
	_, err := call(g, ctx, "done", scope, func(ctx context.Context) (int64, error) {
		return g.run(ctx, doneScript, scope, g.args(now, scope, bucket, has, remaining, g.endToRedis(reset), episode, ok)).Int64()
	})
	return err
}

// unixMilli returns the time of ms Unix milliseconds; 0 is the zero time.
func unixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// upMilli returns t in Unix milliseconds, rounded up: a wait until it is
// never shortened.
func upMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// upHorizon returns t in Unix milliseconds, rounded up, and at most
// Horizon after now.
func upHorizon(now, t time.Time) int64 {
	ahead := now.UnixMilli() + Horizon.Milliseconds()
	if t.After(time.UnixMilli(ahead)) {
		return ahead
	}
	return upMilli(t)
}

// ceilMilli rounds d up to a whole millisecond.
func ceilMilli(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
