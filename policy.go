// Policies: how the requests of one route are retried, their defaults,
// backoffs, and the Options that configure a Transport.

package heed

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/heed-go/heed/internal/rules"
)

// Package defaults, for the zero fields of a Policy and the options not
// given.
const (
	DefaultMaxAttempts = 5                // Policy.MaxAttempts: attempts, the first included
	DefaultMaxWait     = 60 * time.Second // Policy.MaxWait: the longest wait in process
	DefaultMinWait     = time.Second      // Policy.MinWait: the least wait after a server hint
	DefaultMaxWaiting  = 1000             // Policy.MaxWaiting: RoundTrips of a scope waiting at once
	DefaultBodyBuffer  = 1 << 20          // WithBodyBuffer: bytes of a body buffered to replay it
	DefaultMaxHold     = 24 * time.Hour   // WithMaxHold: how far ahead a response may hold its scope
)

// Policy says how the requests of one route are retried. A zero field means
// the default in its comment; a Policy given to WithRoute does not inherit
// from the one given to WithPolicy.
type Policy struct {
	Name        string        // shown in logs and errors; default: the route pattern, or "default"
	MaxAttempts int           // attempts, the first included; 1 never retries; default 5
	MaxElapsed  time.Duration // bounds one RoundTrip's waits beside the context's deadline, not an attempt; default none
	MaxWait     time.Duration // the longest single wait in process, before jitter; a longer one defers; default 60s
	MinWait     time.Duration // the least wait after any server hint, 0 or a past date included; default 1s
	Backoff     Backoff       // the wait when the server gives no hint; default EqualJitter(1s, 30s)
	Jitter      time.Duration // the most random time added after a server hint, never before it; default 0
	Reserve     time.Duration // kept for the next attempt when a wait is judged, or the last attempt's time if longer; default 0
	Classify    Classifier    // what each response or error means; default DefaultClassifier
	Scope       string        // names the requests that share holds, quotas, pace and budget; default the host
	// KeyHeader names an idempotency-key header: a POST or PATCH without
	// one gets a key, the same on every attempt (random, or derived under
	// WithIdempotencyKey); one with it is replay-safe. Default: none.
	KeyHeader   string
	RetryUnsafe bool   // resend Ambiguous failures of non-idempotent requests anyway
	Budget      Budget // bounds the scope's retries; default: the zero Budget
	// ScopeFor, if set, names each request's scope (a tenant, say), called
	// once per RoundTrip, concurrently; "" falls back to Scope.
	ScopeFor   func(*http.Request) string
	Limit      Limit // what the caller knows of the server's limit; heed never exceeds it
	MaxWaiting int   // the most RoundTrips of a scope waiting to send; one more defers; default DefaultMaxWaiting
	// PeekSuccess reads a 2xx body's start (4 KiB, left whole) for a
	// refusal it hides: a GraphQL throttle, or an event stream whose first
	// event is an error (docs/classification.md). Default false.
	PeekSuccess bool
}

// Backoff gives the wait before a retry when the server gave no hint.
// retry is 1 for the first retry.
type Backoff func(retry int) time.Duration

// EqualJitter returns a Backoff that doubles from first up to cap and waits
// half of that fixed plus a random part of the other half.
func EqualJitter(first, cap time.Duration) Backoff {
	return func(retry int) time.Duration {
		d := exponential(first, cap, retry)
		half := d / 2
		return half + rules.RandUpTo(d-half)
	}
}

// FullJitter returns a Backoff that doubles from first up to cap and waits a
// random duration in [0, that].
func FullJitter(first, cap time.Duration) Backoff {
	return func(retry int) time.Duration {
		return rules.RandUpTo(exponential(first, cap, retry))
	}
}

// Constant returns a Backoff that always waits d.
func Constant(d time.Duration) Backoff {
	return func(int) time.Duration { return d }
}

// exponential is first·2^(retry-1), capped at cap, without overflow.
func exponential(first, cap time.Duration, retry int) time.Duration {
	if first <= 0 {
		return 0
	}
	if cap < first {
		cap = first
	}
	d := first
	for i := 1; i < retry; i++ {
		if d >= cap/2 {
			return cap
		}
		d *= 2
	}
	return min(d, cap)
}

// Option configures a Transport.
type Option interface {
	apply(*Transport)
}

type optionFunc func(*Transport)

func (f optionFunc) apply(t *Transport) { f(t) }

// WithPolicy sets the policy for requests that match no route.
// Default: the zero Policy, named "default".
func WithPolicy(p Policy) Option {
	return optionFunc(func(t *Transport) { t.fallback = p })
}

// WithRoute sets the policy for requests that match pattern, in the syntax
// and precedence of net/http.ServeMux patterns ("[METHOD ][HOST]/[PATH]").
// New panics on an invalid pattern or two that conflict, as ServeMux does.
func WithRoute(pattern string, p Policy) Option {
	return optionFunc(func(t *Transport) {
		t.routeSpecs = append(t.routeSpecs, routeSpec{pattern, p})
	})
}

// WithBodyBuffer sets how many bytes of a body that nothing else can
// replay (no GetBody, no io.ReaderAt) heed buffers to retry it; a larger
// body is streamed once, not retried. Default (also for n <= 0): 1 MiB.
func WithBodyBuffer(n int64) Option {
	return optionFunc(func(t *Transport) {
		if n <= 0 {
			n = DefaultBodyBuffer
		}
		t.bodyBound = n
	})
}

// WithLogger sets the logger for decisions. Default (also for nil):
// zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(t *Transport) {
		if l == nil {
			l = zap.NewNop()
		}
		t.log, t.zapped = l, true
	})
}

// WithSlog sets a log/slog logger for decisions, with the same messages,
// keys, levels and redaction as WithLogger's zap lines. Default (also for
// nil): none. With both set, each gets every line.
func WithSlog(l *slog.Logger) Option {
	return optionFunc(func(t *Transport) { t.slog = l })
}

// WithMaxHold bounds how far ahead one response can hold its scope for the
// other requests, by a hint or a quota's reset; the request that got the
// hint still waits or defers by the hint itself. Default (also for
// d <= 0): DefaultMaxHold.
func WithMaxHold(d time.Duration) Option {
	return optionFunc(func(t *Transport) {
		if d <= 0 {
			d = DefaultMaxHold
		}
		t.maxHold = d
	})
}

// WithGate sets the gate that holds the scopes' "not before" times. Pass one
// Gate to several Transports to share it. Default (also for nil): a gate
// private to this Transport.
func WithGate(g Gate) Option {
	return optionFunc(func(t *Transport) { t.gate = g })
}

// policy is a Policy with every default filled in.
type policy struct {
	name        string
	maxAttempts int
	maxElapsed  time.Duration
	maxWait     time.Duration
	minWait     time.Duration
	backoff     Backoff
	jitter      time.Duration
	reserve     time.Duration
	classify    Classifier
	scope       string
	scopeFor    func(*http.Request) string
	limit       Limit
	maxWaiting  int
	keyHeader   string // canonical form
	builtin     bool   // classify is DefaultClassifier's, told of keyHeader, and nothing more
	retryUnsafe bool
	budget      Budget
	peekSuccess bool
	// calm: a call may go on the calm path (calm.go): no Limit, and a
	// retry budget that is off or has a floor
	calm   bool
	public Policy // the same, as a Policy with every default filled in
}

var defaultBackoff = EqualJitter(time.Second, 30*time.Second)

func resolve(p Policy, name string) *policy {
	r := &policy{
		name:        p.Name,
		maxAttempts: p.MaxAttempts,
		maxElapsed:  max(p.MaxElapsed, 0),
		maxWait:     p.MaxWait,
		minWait:     p.MinWait,
		backoff:     p.Backoff,
		jitter:      max(p.Jitter, 0),
		reserve:     max(p.Reserve, 0),
		classify:    p.Classify,
		scope:       p.Scope,
		scopeFor:    p.ScopeFor,
		limit:       p.Limit,
		maxWaiting:  p.MaxWaiting,
		retryUnsafe: p.RetryUnsafe,
		budget:      p.Budget,
	}
	if r.name == "" {
		r.name = name
	}
	if r.maxAttempts <= 0 {
		r.maxAttempts = DefaultMaxAttempts
	}
	if r.maxWait <= 0 {
		r.maxWait = DefaultMaxWait
	}
	if r.minWait <= 0 {
		r.minWait = DefaultMinWait
	}
	if r.maxWaiting <= 0 {
		r.maxWaiting = DefaultMaxWaiting
	}
	if r.limit.Burst < 1 && r.limit.Rate > 0 {
		r.limit.Burst = 1
	}
	if r.backoff == nil {
		r.backoff = defaultBackoff
	}
	r.calm = r.limit == (Limit{}) && (r.budget.Disabled || r.budget.MinPerSecond >= 0)
	if p.KeyHeader != "" {
		r.keyHeader = http.CanonicalHeaderKey(strings.TrimSpace(p.KeyHeader))
	}
	if r.classify == nil {
		// DefaultClassifier, told of the policy's key header for the 409
		// rule ("the original is still being processed").
		r.classify = DefaultClassifier
		if r.keyHeader != "" {
			r.classify = keyedClassifier(r.keyHeader)
		}
		r.builtin = true
	}
	if p.PeekSuccess {
		r.peekSuccess = true
		r.classify = successClassifier(r.classify)
		r.builtin = false
	}
	r.public = Policy{
		Name: r.name, MaxAttempts: r.maxAttempts, MaxElapsed: r.maxElapsed, MaxWait: r.maxWait,
		MinWait: r.minWait, Backoff: r.backoff, Jitter: r.jitter, Reserve: r.reserve,
		Classify: r.classify, Scope: r.scope, ScopeFor: r.scopeFor, Limit: r.limit, MaxWaiting: r.maxWaiting, KeyHeader: r.keyHeader, RetryUnsafe: r.retryUnsafe,
		Budget: r.budget, PeekSuccess: r.peekSuccess,
	}
	return r
}
