// Policies: how the requests of one route are retried, their defaults,
// backoffs, and the Options that configure a Transport.

package heed

import (
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/heed-go/heed/internal/rules"
)

// Package defaults for the zero fields of a Policy.
const (
	// DefaultMaxAttempts is the number of attempts, the first included, when
	// Policy.MaxAttempts is 0.
	DefaultMaxAttempts = 5
	// DefaultMaxWait is the longest single in-process wait when
	// Policy.MaxWait is 0. A longer wait defers.
	DefaultMaxWait = 60 * time.Second
	// DefaultMinWait is the least wait after a server hint when
	// Policy.MinWait is 0.
	DefaultMinWait = time.Second
	// DefaultBodyBuffer is how many bytes of a request body that cannot be
	// replayed otherwise are buffered so that the request can be retried.
	// A larger body is sent once and not retried.
	DefaultBodyBuffer = 1 << 20
)

// Policy says how the requests of one route are retried. The zero value of
// every field means the package default given in its comment; a Policy given
// to WithRoute does not inherit from the one given to WithPolicy.
type Policy struct {
	// Name is shown in logs and errors. Default: the route pattern, or
	// "default" for the policy given to WithPolicy.
	Name string
	// MaxAttempts is the number of attempts including the first. Default 5.
	// 1 never retries.
	MaxAttempts int
	// MaxElapsed is the time one RoundTrip may spend, beside the context
	// deadline: the earlier of the two ends it. It bounds waiting, not an
	// attempt in flight; use the context or http.Client.Timeout for that.
	// Default: none.
	MaxElapsed time.Duration
	// MaxWait is the longest single in-process wait, before jitter. A
	// longer wait returns a *DeferredError at once. Default 60s.
	MaxWait time.Duration
	// MinWait is the least wait after any server hint: a hint of 0, a past
	// date or 200ms all become MinWait. Default 1s.
	MinWait time.Duration
	// Backoff is the wait when the server gives no hint.
	// Default: EqualJitter(1s, 30s).
	Backoff Backoff
	// Jitter is the most random spacing added after a server hint, never
	// before it. Default 0.
	Jitter time.Duration
	// Reserve is the least time kept for the next attempt itself when
	// deciding whether a wait fits the time left. The duration of the attempt
	// just made is used when it is larger. Default 0.
	Reserve time.Duration
	// Classify decides what each response or error means.
	// Default: DefaultClassifier.
	Classify Classifier
	// Scope is the gate scope: requests of one scope share one "not before"
	// time, published quota and retry budget. Routes that share one server
	// limit should share a Scope. Default: the request's host.
	Scope string
	// KeyHeader, if set, names an idempotency-key header. A POST or PATCH
	// without it gets one random key per RoundTrip, the same on every
	// attempt, and a request carrying it is replay-safe. Default: none.
	KeyHeader string
	// RetryUnsafe resends Ambiguous failures of non-idempotent requests
	// anyway. Default false.
	RetryUnsafe bool
	// Budget limits the retries of each scope to a share of its first
	// attempts. Default: the zero Budget, that is a ratio of 0.2 plus 10
	// retries a second over 10s; Budget{Disabled: true} turns it off.
	Budget Budget
	// ScopeFor, if set, names the scope of each request, from the request
	// or its context: a multi-tenant caller keeps tenants that have limits
	// of their own apart on one host. An empty name falls back to Scope. It
	// is called once per RoundTrip, from many goroutines at once.
	// Default: none.
	ScopeFor func(*http.Request) string
	// Limit is what the caller knows of the server's limit for the sends
	// of this policy in each scope: heed never exceeds it, and obeys the
	// server where it asks for less. Default: the zero Limit, none known.
	Limit Limit
	// MaxWaiting is the most RoundTrips of a scope that wait to send at
	// once, behind a hold, a published quota, a pace or a Limit; one more
	// defers at once, with RetryAt the end of its wait. Default
	// DefaultMaxWaiting.
	MaxWaiting int
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

// WithRoute sets the policy for requests that match pattern, which has the
// syntax of net/http.ServeMux patterns ("[METHOD ][HOST]/[PATH]"), and the
// same precedence: the most specific pattern wins. A request that matches no
// route uses the policy of WithPolicy. New panics on an invalid pattern, or
// on two patterns that conflict, as ServeMux.Handle does.
func WithRoute(pattern string, p Policy) Option {
	return optionFunc(func(t *Transport) {
		t.routeSpecs = append(t.routeSpecs, routeSpec{pattern, p})
	})
}

// WithBodyBuffer sets how many bytes of a request body heed buffers so that
// the request can be retried, when nothing else can replay it (no GetBody,
// not an io.ReaderAt of known size). A larger body is sent once, streamed,
// and not retried. Default (also for n <= 0): DefaultBodyBuffer, 1 MiB.
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
		t.log = l
	})
}

// DefaultMaxHold is the longest a Transport holds a scope for other
// requests, or counts a published quota toward a reset, when WithMaxHold is
// not given.
const DefaultMaxHold = 24 * time.Hour

// WithMaxHold bounds what one response can impose on the other requests of
// its scope: a hold (a throttled response's hint) and a published quota's
// reset are shared with the gate as at most d ahead. The request that got
// the hint still waits or defers by the hint itself: the server's word
// stands for it. Default (also for d <= 0): DefaultMaxHold, a day.
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
	retryUnsafe bool
	budget      Budget
	public      Policy // the same, as a Policy with every default filled in
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
	}
	r.public = Policy{
		Name: r.name, MaxAttempts: r.maxAttempts, MaxElapsed: r.maxElapsed, MaxWait: r.maxWait,
		MinWait: r.minWait, Backoff: r.backoff, Jitter: r.jitter, Reserve: r.reserve,
		Classify: r.classify, Scope: r.scope, ScopeFor: r.scopeFor, Limit: r.limit, MaxWaiting: r.maxWaiting, KeyHeader: r.keyHeader, RetryUnsafe: r.retryUnsafe,
		Budget: r.budget,
	}
	return r
}
