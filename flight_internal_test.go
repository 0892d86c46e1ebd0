package heed

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFlightCountsNoLessThanOne: the limiter counts its sends in flight
// and gone in one word (flight), so a send's level is never below one and
// the count in flight the ceiling sets against its cap never below zero,
// however sends go and are answered beside it. Goroutines send and answer
// through one limiter, as a herd does, while a probe reads.
func TestFlightCountsNoLessThanOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(a *adaptive, now time.Time) (int64, bool) // one probe: the value read, and whether it is wrong
	}{
		{"a send's level", func(a *adaptive, now time.Time) (int64, bool) {
			level := a.sent(now)
			a.release(now, level, -1)
			return level, level < 1
		}},
		{"the count in flight", func(a *adaptive, now time.Time) (int64, bool) {
			n := a.flight.load()
			return n, n < 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a adaptive
			var stop atomic.Bool
			var first atomic.Int64
			var seen atomic.Bool
			var wg sync.WaitGroup
			deadline := time.Now().Add(500 * time.Millisecond)
			// the herd
			for range 3 {
				wg.Go(func() {
					now := time.Now()
					for !stop.Load() {
						a.release(now, a.sent(now), -1)
					}
				})
			}
			// the probe
			wg.Go(func() {
				defer stop.Store(true)
				now := time.Now()
				for i := 0; ; i++ {
					if v, bad := tc.bad(&a, now); bad {
						first.Store(v)
						seen.Store(true)
						return
					}
					if i%4096 == 0 && time.Now().After(deadline) {
						return
					}
				}
			})
			wg.Wait()
			assert.False(t, seen.Load(), "read %d", first.Load())
		})
	}
}

// TestMeasuredRateNeverBelowZero: a half second's sends are read from the
// sends gone, and two sends whose times straddle a bucket's end can count
// themselves gone in one order and close buckets in the other (the earlier
// one delayed between its time and its send). The later close then counts
// its own send, not a negative number, and the mark never goes back, so
// the measured rate a throttle cuts from stays above zero.
//
// A and B count themselves gone (A first); B, made 1 ms before the second
// half second's end, closes the first; A, made 1 ms after it, closes the
// second.
func TestMeasuredRateNeverBelowZero(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name     string
		reversed bool // A counted gone before B, B measured before A
	}{
		{"in turn", false},
		{"counted and measured in opposite orders", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a adaptive
			a.sent(t0) // the first send, opening the first half second
			var goneA, goneB int64
			if tc.reversed {
				_, goneA = a.flight.add()
				_, goneB = a.flight.add()
			} else {
				_, goneB = a.flight.add()
				_, goneA = a.flight.add()
			}
			b, at := t0.Add(999*time.Millisecond), t0.Add(1001*time.Millisecond)
			a.measure(b, mono(b), goneB)   // B: the second half second
			a.measure(at, mono(at), goneA) // A: the third
			a.mu.Lock()
			rate := a.rate()
			a.mu.Unlock()
			assert.GreaterOrEqual(t, rate, 0.0, "the measured send rate")
		})
	}
}

// TestMeasureBucketsAreHalfSeconds: the measured rate's buckets are the
// half seconds of the monotonic count, each one more than the last, on
// real time and on synctest's, where the count is far from zero either way
// and no product of it overflows.
func TestMeasureBucketsAreHalfSeconds(t *testing.T) {
	run := func(t *testing.T) {
		var a adaptive
		var last int64
		for i := range 6 {
			now := time.Now()
			a.sent(now)
			b := a.bucket.Load()
			assert.Positive(t, b)
			assert.Equal(t, mono(now)/(int64(time.Second)/adaptiveBucket), b)
			if i > 0 {
				assert.Equal(t, last+1, b, "one half second on")
			}
			last = b
			time.Sleep(time.Second / adaptiveBucket)
		}
	}
	t.Run("synctest", func(t *testing.T) { synctest.Test(t, run) })
	t.Run("real time", func(t *testing.T) {
		// Start just past a half second's start, so that sleeps of half a
		// second land in the next one.
		time.Sleep(time.Duration(int64(time.Second)/adaptiveBucket - mono(time.Now())%(int64(time.Second)/adaptiveBucket) + int64(50*time.Millisecond)))
		var a adaptive
		now := time.Now()
		a.sent(now)
		b := a.bucket.Load()
		assert.Equal(t, mono(now)/(int64(time.Second)/adaptiveBucket), b)
		assert.Positive(t, b)
	})
}

// TestMeasuredRateOfAFirstBucketCutShort: the first half second's bucket
// begins with the scope's first send, wherever that falls in the half
// second, and runs on into the next half second if less than a quarter of
// it is left. A herd whose sends straddle the bucket's end measures the
// same rate as one that does not: read as a whole half second, the few of
// its sends before the end measured a fraction of it, and a pace started
// from that went far below the server's rate.
func TestMeasuredRateOfAFirstBucketCutShort(t *testing.T) {
	for _, tc := range []struct {
		herd   int
		before time.Duration // how long before the bucket's end the herd starts
	}{
		{32, 2 * time.Millisecond},
		{32, 50 * time.Millisecond},
		{32, 400 * time.Millisecond},
		{10, time.Millisecond},
		{128, 3 * time.Millisecond},
	} {
		t.Run(strconv.Itoa(tc.herd)+" sends, "+tc.before.String()+" before", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				half := int64(time.Second / adaptiveBucket)
				end := (mono(time.Now())/half + 1) * half
				time.Sleep(time.Duration(end-mono(time.Now())) - tc.before)
				var a adaptive
				for range tc.herd {
					a.sent(time.Now())
					time.Sleep(5 * time.Millisecond / time.Duration(tc.herd))
				}
				a.mu.Lock()
				rate := a.rate()
				a.mu.Unlock()
				// The herd's count over its 5 ms, taken as a tenth of a
				// second, wherever the half second ends.
				want := float64(tc.herd) / math.Max((5*time.Millisecond).Seconds(), 0.1)
				assert.InDelta(t, want, rate, want*0.1, "the herd's rate, not its part of a half second")
			})
		})
	}
}
