// Options: how a gate made by New is configured.

package redisgate

import (
	"time"

	"go.uber.org/zap"
)

// Option configures a gate made by New.
type Option interface {
	apply(*gate)
}

type optionFunc func(*gate)

func (f optionFunc) apply(g *gate) { f(g) }

const (
	// DefaultPrefix is the prefix of the gate's keys without WithPrefix.
	DefaultPrefix = "heed:gate:"
	// DefaultTimeout bounds each Redis call without WithTimeout.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultMaxInFlight is the in-flight lifetime without WithMaxInFlight.
	DefaultMaxInFlight = time.Minute
)

// WithPrefix sets the prefix of the gate's Redis keys: a scope's hash is
// the prefix followed by the scope in braces, its braces and percent signs
// percent-encoded (see Storage in the package doc). Default:
// DefaultPrefix, "heed:gate:". Gates share their scopes only if they share
// the prefix.
func WithPrefix(prefix string) Option {
	return optionFunc(func(g *gate) { g.prefix = prefix })
}

// WithTimeout bounds every Redis call of the gate; a call that takes longer
// fails, and the request it served goes on without the gate. Default:
// DefaultTimeout, 50ms; zero or less also means the default.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(g *gate) {
		if d <= 0 {
			d = DefaultTimeout
		}
		g.timeout = d
	})
}

// WithLogger sets the logger of the gate's warnings about Redis failures,
// at most one a second. Default: zap.NewNop(); nil also means it.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(g *gate) {
		if l == nil {
			l = zap.NewNop()
		}
		g.warn.log = l
	})
}

// WithMaxInFlight sets d, the least time a send the gate admitted counts as
// in flight when its answer never comes (its process died): it stops
// counting between d and 2d after it was admitted. Make d longer than the
// longest request. Default: DefaultMaxInFlight, one minute; it is rounded
// up to a whole millisecond, and zero or less means the default.
func WithMaxInFlight(d time.Duration) Option {
	return optionFunc(func(g *gate) {
		if d <= 0 {
			d = DefaultMaxInFlight
		}
		g.life = ceilMilli(d)
	})
}

// WithInferredQuota turns the inferred quota on or off, as
// heed.WithInferredQuota does for heed.NewGate: a scope throttled window
// after window, with the same number of sends served each time and each
// throttle early in its window (its hold lasting at least half the
// period), and with no shared pace (a herd's Transports pace it through
// the gate, and the pace tells a window from a bucket), is held to that
// number a window. Default: on, unlike heed.NewGate's, since a
// gate the fleet shares sees the fleet's traffic; turn it off when other
// clients, outside the gate, spend the same quota. Gates sharing a prefix
// should agree: a gate with it off neither learns nor obeys a learned
// capacity.
func WithInferredQuota(on bool) Option {
	return optionFunc(func(g *gate) { g.infer = on })
}
