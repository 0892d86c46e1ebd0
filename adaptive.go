// The adaptive limiter: a scope's client-side pace after it is throttled
// with sends in flight, a token bucket whose rate falls on a throttle and
// climbs back along a cubic curve.

package heed

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// adaptive is a scope's client-side rate limiter, after the CUBIC-based
// adaptive mode of the AWS SDKs. It is off until the scope is first
// throttled while other sends of it are in flight. Then it paces sends with a token bucket whose rate starts at
// 0.7 × the rate the scope was sending at, and grows back along a cubic
// curve, past that rate, until the next throttle. Its bucket holds up to a
// second of sends, so a scope that waited at the gate may send a burst when
// the gate opens, as a fixed-window server allows, while a token-bucket
// server, which refills slowly, sees a steady rate and few 429s.
type adaptive struct {
	mu sync.Mutex

	enabled  bool
	active   atomic.Bool  // enabled, read without the lock
	inflight atomic.Int64 // sends gone and not yet answered
	fillRate float64      // sends a second
	capacity float64
	tokens   float64
	lastFill time.Time

	// measured send rate, in half-second buckets, smoothed
	first    time.Time
	warm     bool  // a whole half second has been measured
	bucket   int64 // index of the current half second
	count    float64
	measured float64

	floor        float64 // one send per the last throttle's hint
	lastMax      float64 // the rate when last throttled
	lastThrottle time.Time
	k            float64 // seconds for the cubic to climb back to lastMax
}

// paceHintLimit is the shortest hint that the gate alone answers: a
// throttle with such a hint does not lower the pace.
const paceHintLimit = time.Second

// Adaptive limiter constants, as in the AWS SDKs.
const (
	adaptiveBeta    = 0.7 // rate kept on a throttle
	adaptiveC       = 0.4 // the cubic's scale
	adaptiveSmooth  = 0.8 // weight of the newest measured rate
	adaptiveMinRate = 0.5 // sends a second, at the least
	adaptiveBucket  = 2   // measured-rate buckets a second
)

// wait returns how long a send must wait for a token; 0 when it may go.
// It takes nothing: sent does, when the send goes.
func (a *adaptive) wait(now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.enabled {
		return 0
	}
	a.refill(now)
	if a.tokens >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - a.tokens) / a.fillRate * float64(time.Second)))
}

// sent records a send going out: it takes a token and counts the send.
func (a *adaptive) sent(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.measure(now)
	a.inflight.Add(1)
	if a.enabled {
		a.refill(now)
		a.tokens--
	}
}

func (a *adaptive) refill(now time.Time) {
	if d := now.Sub(a.lastFill).Seconds(); d > 0 {
		a.tokens = math.Min(a.capacity, a.tokens+d*a.fillRate)
	}
	a.lastFill = now
}

// release accounts for a send that ends without a throttle: delivered, or
// deferred before it was written.
func (a *adaptive) release(now, sent time.Time) {
	if a.active.Load() {
		a.answered(now, sent, false, 0)
		return
	}
	a.inflight.Add(-1) // all answered does when off
}

// answered records the answer to an attempt sent at sent: throttled or
// not, and the server's hint, if it gave one. Only a throttle of an attempt
// sent after the last throttle lowers the rate, so that one burst of 429s
// counts once. A throttle with a hint sets the pace to one send per hint,
// the pace the server itself named; one without, to 0.7 of the rate the
// scope was sending at.
func (a *adaptive) answered(now, sent time.Time, throttled bool, hint time.Duration) {
	others := a.inflight.Add(-1)
	a.mu.Lock()
	defer a.mu.Unlock()
	// A lone caller, one send at a time, makes no herd: the server's hints
	// pace it. The limiter starts when a throttle comes while other sends
	// of the scope are in flight.
	if !a.enabled && (!throttled || others <= 0) {
		return
	}
	// A hint of a second or more names the instant capacity returns, as
	// a fixed window's does: the gate holds the scope until then, and
	// pacing below the rate the scope had would only leave the next
	// window part unused. Such a throttle counts as no throttle here.
	if throttled && hint >= paceHintLimit {
		throttled = false
		if !a.enabled {
			return
		}
	}
	if throttled && a.enabled && !sent.After(a.lastThrottle) {
		return
	}
	var rate float64
	if throttled {
		base := a.measured
		if a.enabled {
			base = math.Min(base, a.fillRate)
		}
		if hint > 0 {
			// The server said when one more send may go: pace at that,
			// as if the scope had been sending at 1/β of it, so that
			// the cubic climbs back from there.
			base = 1 / hint.Seconds() / adaptiveBeta
		}
		a.lastMax = base
		a.k = math.Cbrt(a.lastMax * (1 - adaptiveBeta) / adaptiveC)
		a.lastThrottle = now
		rate = base * adaptiveBeta
		if hint > 0 {
			a.floor = 1 / hint.Seconds()
		} else {
			a.floor = adaptiveMinRate
		}
		if !a.enabled {
			a.enabled, a.tokens, a.lastFill = true, 0, now
			a.active.Store(true)
		}
	} else {
		t := now.Sub(a.lastThrottle).Seconds() - a.k
		rate = adaptiveC*t*t*t + a.lastMax
	}
	a.refill(now)
	a.fillRate = math.Max(rate, math.Max(a.floor, adaptiveMinRate))
	a.capacity = math.Max(rate, 1)
	a.tokens = math.Min(a.tokens, a.capacity)
}

// measure counts one send into the smoothed send rate: sends per half
// second in which there were any. Before the first half second is over,
// the rate is the count over the time so far, taken as at least a tenth of
// a second.
func (a *adaptive) measure(now time.Time) {
	if a.first.IsZero() {
		a.first = now
		a.bucket = now.UnixNano() * adaptiveBucket / int64(time.Second)
	}
	a.count++
	b := now.UnixNano() * adaptiveBucket / int64(time.Second)
	if b > a.bucket {
		// The rate while sending: a gap with no answers, such as a wait
		// at the gate, does not count as sending slowly.
		rate := a.count * adaptiveBucket
		if a.warm {
			rate = rate*adaptiveSmooth + a.measured*(1-adaptiveSmooth)
		}
		a.measured, a.warm = rate, true
		a.count, a.bucket = 0, b
		return
	}
	if !a.warm {
		a.measured = a.count / math.Max(now.Sub(a.first).Seconds(), 0.1)
	}
}
