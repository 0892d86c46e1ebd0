package heed

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCalmPanicHandsOffTheCap: a calm call counted in by another call
// of its scope holds a send in flight under the scope's learned cap; when it
// ends without an answer (its inner transport panics), the slot it held is
// given to the send waiting for one, as a registered call's end gives it
// (end: limiter.release → answered → ceil.answer).
func TestCalmPanicHandsOffTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		releaseA := make(chan struct{})
		var mu sync.Mutex
		var bSends []time.Time
		inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/a" {
				<-releaseA
				panic("inner transport panics")
			}
			mu.Lock()
			bSends = append(bSends, time.Now())
			n := len(bSends)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // long enough a service for the cap to learn
			if n == 1 {
				// refused for the sends in flight: no hint
				return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		tr := New(inner, WithPolicy(Policy{MaxAttempts: 3, MaxWait: 10 * time.Second}))
		get := func(path string) (*http.Response, error) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test"+path, nil)
			require.NoError(t, err)
			return tr.RoundTrip(req)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			defer func() { _ = recover() }()
			_, _ = get("/a")
		})
		synctest.Wait()
		require.Empty(t, tr.scopes, "A is calm")
		var bErr error
		var bResp *http.Response
		wg.Go(func() { bResp, bErr = get("/b") })
		time.Sleep(30 * time.Millisecond) // B's first send is answered
		synctest.Wait()
		sl := tr.scopes["api.test"]
		require.NotNil(t, sl)
		require.True(t, sl.limiter.ceil.on.Load(), "B's refusal beside A set a cap")
		require.Len(t, bSends, 1, "B's retry waits for a slot under the cap")
		panicked := time.Now()
		close(releaseA)
		synctest.Wait()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if assert.Len(t, bSends, 2) {
			assert.Less(t, bSends[1].Sub(panicked), time.Second, "B's retry goes as A's slot is free, not at its MaxWait")
		}
		var de *DeferredError
		assert.False(t, errors.As(bErr, &de), "B is not deferred for a slot that was free: %v", bErr)
		if bResp != nil {
			_, _ = io.Copy(io.Discard, bResp.Body)
		}
		assert.Zero(t, sl.limiter.flight.load())
	})
}

// TestCalmJoinUnsentHandsOffTheCap: the same at admission: a calm call
// counted in by another, whose phantom send fills the cap, joins unsent and
// takes its send back from the count; the send waiting for the slot gets it.
func TestCalmJoinUnsentHandsOffTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(answering(nil), WithPolicy(Policy{MaxWait: 10 * time.Second}))
		a := calmCall(t, tr, "api.test")
		require.True(t, a.lent)
		b := calmCall(t, tr, "api.test")
		sl := tr.scopes["api.test"]
		require.NotNil(t, sl)
		require.Equal(t, int64(1), sl.limiter.flight.load(), "A's send counted in")
		// The cap learned meanwhile: one send at a time.
		ceil := &sl.limiter.ceil
		ceil.mu.Lock()
		ceil.limit, ceil.inflight, ceil.took, ceil.grown = 1, &sl.limiter.flight, 50*time.Millisecond, true
		ceil.mu.Unlock()
		ceil.on.Store(true)
		sl.limiter.active.Store(true) // as refused sets it with the cap
		got := make(chan error, 1)
		go func() {
			now, err := b.passGate(1, time.Now())
			if err == nil {
				_, err = b.passCeiling(1, now)
			}
			got <- err
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("B went past a full cap")
		default:
		}
		start := time.Now()
		_, err := a.passGate(1, time.Now()) // A joins: its send is not in flight
		require.NoError(t, err)
		assert.Zero(t, sl.limiter.flight.load(), "A's phantom send is taken back")
		synctest.Wait()
		select {
		case err := <-got:
			assert.NoError(t, err)
			assert.Less(t, time.Since(start), time.Second)
		default:
			t.Error("B still waits for a slot that is free: nothing handed it off")
			err := <-got
			t.Logf("B after %v: %v", time.Since(start), err)
		}
	})
}

// paceOn turns sl's pace on: one send a second, no token left.
func paceOn(sl *scopeLocal) {
	a := &sl.limiter
	a.mu.Lock()
	a.enabled, a.fillRate, a.capacity = true, 1, 1
	a.issued, a.granted, a.lastFill = 0, 0, time.Now()
	a.mu.Unlock()
	a.active.Store(true)
}

// TestCalmJoinAtAdmissionKeepsThePace: a calm call counted in by
// another call of its scope, whose pace is on by the time it is admitted,
// waits for its pacing token as a call of the registered scope does: it
// is paced in the scope it joins, not by the calm scope it joined from.
func TestCalmJoinAtAdmissionKeepsThePace(t *testing.T) {
	for _, calm := range []bool{false, true} {
		name := "registered"
		if calm {
			name = "calm, counted in"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := New(answering(nil), WithPolicy(Policy{MaxWait: 10 * time.Second}))
				a := calmCall(t, tr, "api.test")
				b := calmCall(t, tr, "api.test")
				sl := tr.scopes["api.test"]
				require.NotNil(t, sl)
				c := a
				if !calm {
					c = b
				}
				paceOn(sl)
				start := time.Now()
				_, err := c.passGate(1, start)
				require.NoError(t, err)
				assert.Same(t, sl, c.local)
				assert.GreaterOrEqual(t, time.Since(start), time.Second, "waited for its token")
			})
		})
	}
}

// TestCalmUnsentIsNoSendGone: a calm call counted in by another call
// of its scope, that ends without sending, leaves the scope's count of
// sends gone (the measured rate's) as it found it; one that joins before
// it sends counts its send once.
func TestCalmUnsentIsNoSendGone(t *testing.T) {
	for _, step := range []string{"end", "admission"} {
		t.Run(step, func(t *testing.T) {
			tr := New(answering(nil))
			a := calmCall(t, tr, "api.test")
			b := calmCall(t, tr, "api.test")
			sl := tr.scopes["api.test"]
			require.NotNil(t, sl)
			want := int64(0)
			if step == "admission" {
				_, err := a.passGate(1, time.Now())
				require.NoError(t, err)
				sl.limiter.sentAt(time.Now(), mono(time.Now())) // as run counts its send
				want = 1
			}
			assert.Equal(t, want, sl.limiter.flight.gone(), "sends gone")
			a.outAt = time.Time{}
			a.end()
			b.end()
		})
	}
}
