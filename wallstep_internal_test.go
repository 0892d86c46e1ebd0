package heed

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readBefore returns the clocks' reading now as a timeSource would hold it
// had the wall clock been stepped by step since that reading was taken
// (less than clockRebase ago): the monotonic reading is now's, the wall
// reading is now's less step. A step back (negative) leaves the time
// source's wall reading ahead of the wall clock, for up to clockRebase.
func readBefore(t *testing.T, step time.Duration) *time.Time {
	t.Helper()
	now := time.Now()
	require.Contains(t, now.String(), "m=+", "a reading with a monotonic clock (not in a synctest bubble)")
	require.Zero(t, step%time.Second, "whole seconds")
	// time.Time is {wall uint64; ext int64; loc *Location}; with a
	// monotonic reading, wall holds the seconds since 1885 at bit 30.
	w := (*uint64)(unsafe.Pointer(&now))
	secs := int64(step / time.Second)
	if secs >= 0 {
		*w -= uint64(secs) << 30
	} else {
		*w += uint64(-secs) << 30
	}
	require.InDelta(t, float64(-step), float64(now.UnixNano()-time.Now().UnixNano()), float64(100*time.Millisecond), "the wall reading moved")
	require.Less(t, time.Since(now), 100*time.Millisecond, "the monotonic reading kept")
	return &now
}

// TestWireCheckAfterAWallStep: whether a send is checked at the wire is
// decided on the monotonic clock (mono): a step of the wall clock back,
// which leaves the time source's wall reading ahead of it for up to a
// second, does not make a send a few milliseconds after a throttle look a
// minute old, so it is checked, and waits out or defers inside the hold
// (Retry-After: 30) rather than being written.
func TestWireCheckAfterAWallStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		step time.Duration // of the wall clock, since the time source's reading
	}{
		{"no step", 0},
		{"wall clock stepped back 2 minutes", -2 * time.Minute},
		{"wall clock stepped back 5 minutes", -5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr *Transport
			checked := false
			inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				h, status := http.Header{}, http.StatusOK
				switch r.URL.Path {
				case "/first":
					status = http.StatusTooManyRequests
					h.Set("Retry-After-Ms", "5") // a hold over by the next send
				case "/herd":
					status = http.StatusTooManyRequests
					h.Set("Retry-After", "30")
				case "/late":
					// While this send's connection was made, another send
					// of its herd was throttled.
					req, err := http.NewRequest(http.MethodGet, "https://api.test/herd", nil)
					if err != nil {
						return nil, err
					}
					if resp, err := tr.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
					// The connection is ready: net/http calls GotConn.
					if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.GotConn != nil {
						checked = true
						trace.GotConn(httptrace.GotConnInfo{})
					}
					if err := context.Cause(r.Context()); err != nil {
						return nil, err // deferred by the wire check: nothing written
					}
				}
				return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
			})
			tr = New(inner, WithPolicy(Policy{MaxAttempts: 1, MinWait: time.Millisecond, MaxWait: 100 * time.Millisecond}))
			send := func(path string) (*http.Response, error) {
				req, err := http.NewRequest(http.MethodGet, "https://api.test"+path, nil)
				require.NoError(t, err)
				return tr.RoundTrip(req)
			}
			resp, err := send("/first")
			require.NoError(t, err)
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			time.Sleep(20 * time.Millisecond) // its hold is over

			if tc.step != 0 {
				r := readBefore(t, tc.step)
				tr.times.base.Store(&reading{*r, mono(*r)})
			}
			resp, err = send("/late")
			assert.True(t, checked, "a send a few milliseconds after a throttle is checked at the wire")
			var de *DeferredError
			if !assert.True(t, errors.As(err, &de), "deferred unwritten inside the herd's 30 s hold; got %v, %v", resp, err) {
				return
			}
			assert.Equal(t, reasonCoolingDown, de.Reason)
		})
	}
}

// TestRetryBudgetAfterAWallStep: a scope's retry budget counts attempts in
// slots of the monotonic clock (mono), so a first attempt whose time
// source reads ahead of the wall clock, after a step back, does not clear
// the ring, and a budget spent a moment before stays spent.
//
// The budget allows 10 retries in 10 s (no share of first attempts); the
// server answers 500 to everything; 10 calls retry once each, the 11th is
// refused its retry, and so is the 12th, made at once.
func TestRetryBudgetAfterAWallStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		step time.Duration
	}{
		{"no step", 0},
		{"wall clock stepped back 20 s", -20 * time.Second},
		{"wall clock stepped back an hour", -time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sends atomic.Int64
			inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				sends.Add(1)
				return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			})
			tr := New(inner, WithPolicy(Policy{
				MaxAttempts: 2,
				Backoff:     Constant(time.Microsecond),
				Budget:      Budget{Ratio: -1, MinPerSecond: 1, Window: 10 * time.Second},
			}))
			call := func() int64 {
				before := sends.Load()
				req, err := http.NewRequest(http.MethodGet, "https://api.test/", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				return sends.Load() - before
			}
			for i := range 10 {
				require.Equal(t, int64(2), call(), "call %d retries once", i)
			}
			require.Equal(t, int64(1), call(), "the budget is spent: no retry")

			if tc.step != 0 {
				r := readBefore(t, tc.step)
				tr.times.base.Store(&reading{*r, mono(*r)})
			}
			assert.Equal(t, int64(1), call(), "the budget is still spent a moment later: no retry")
		})
	}
}
