package heed_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// sendAll runs n RoundTrips of tr at once and returns their errors.
func sendAll(t *testing.T, tr http.RoundTripper, n int) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := newRequest(t, t.Context(), "GET", fmt.Sprintf("https://api.example/v1/x/%d", i), nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errs
}

// TestLimitRate: a known rate with a burst is never exceeded, and is used
// to the full: the sends of a herd go at the rate's own times.
func TestLimitRate(t *testing.T) {
	tests := []struct {
		rate  float64
		burst int
		n     int
	}{
		{10, 1, 20},
		{50, 5, 60},
		{100, 10, 200},
		{3, 0, 7}, // Burst 0 means 1
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%g/s burst %d", tt.rate, tt.burst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(ok200)
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{Limit: heed.Limit{Rate: tt.rate, Burst: tt.burst}}))
				start := time.Now()
				for _, err := range sendAll(t, tr, tt.n) {
					require.NoError(t, err)
				}
				var at []time.Duration
				for _, s := range rt.requests() {
					at = append(at, s.at.Sub(start))
				}
				slices.Sort(at)
				require.Len(t, at, tt.n)
				burst := max(tt.burst, 1)
				interval := time.Duration(float64(time.Second) / tt.rate)
				for i, d := range at {
					// The i-th send goes no earlier than the bucket allows.
					earliest := time.Duration(max(i-burst+1, 0)) * interval
					assert.GreaterOrEqual(t, d, earliest, "send %d", i)
					assert.LessOrEqual(t, d, earliest+time.Millisecond, "send %d: no later than the rate allows", i)
				}
			})
		})
	}
}

// TestLimitRateDefers: a send whose wait for the known rate does not fit
// its time defers at once, unsent, with RetryAt the time the rate allows.
func TestLimitRateDefers(t *testing.T) {
	for _, rate := range []float64{1, 4} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(ok200)
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{Limit: heed.Limit{Rate: rate}}))
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/a", nil))
				require.NoError(t, err)
				resp.Body.Close()
				interval := time.Duration(float64(time.Second) / rate)
				ctx, cancel := context.WithTimeout(t.Context(), interval/2)
				defer cancel()
				_, err = tr.RoundTrip(newRequest(t, ctx, "GET", "https://api.example/b", nil))
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, 0, de.Attempts)
				assert.Equal(t, "pacing", de.Reason)
				assert.Equal(t, start.Add(interval), de.RetryAt)
				assert.Equal(t, start, time.Now(), "at once")
				assert.Len(t, rt.requests(), 1)

				// The deferred send took no place: the next one goes at the
				// rate's next time.
				resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/c", nil))
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, start.Add(interval), time.Now())
			})
		})
	}
}

// slowRT answers after took, counting the sends in flight at the server.
type slowRT struct {
	took     time.Duration
	inflight atomic.Int32
	most     atomic.Int32
	sends    atomic.Int32
}

func (s *slowRT) RoundTrip(r *http.Request) (*http.Response, error) {
	s.sends.Add(1)
	n := s.inflight.Add(1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(s.took)
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: &doneBody{Reader: strings.NewReader("ok"), done: func() { s.inflight.Add(-1) }}, Request: r}, nil
}

// doneBody calls done when closed, once.
type doneBody struct {
	io.Reader
	done func()
	once sync.Once
}

func (b *doneBody) Close() error { b.once.Do(b.done); return nil }

// TestLimitInFlight: a known cap on sends in flight is never exceeded, a
// send counts until its body is closed, and a herd finishes in as many
// rounds as the cap makes.
func TestLimitInFlight(t *testing.T) {
	tests := []struct{ cap, n int }{{4, 16}, {2, 9}, {8, 32}, {1, 3}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d in flight, %d sends", tt.cap, tt.n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := &slowRT{took: 50 * time.Millisecond}
				tr := heed.New(inner, heed.WithPolicy(heed.Policy{Limit: heed.Limit{InFlight: tt.cap}}))
				start := time.Now()
				for _, err := range sendAll(t, tr, tt.n) {
					require.NoError(t, err)
				}
				assert.Equal(t, int32(tt.cap), inner.most.Load(), "the cap, used to the full and never exceeded")
				rounds := (tt.n + tt.cap - 1) / tt.cap
				assert.Equal(t, time.Duration(rounds)*50*time.Millisecond, time.Since(start))
			})
		})
	}
}

// TestLimitInFlightDefers: behind a cap whose sends take longer than the
// caller's time, a send defers at once, unsent, with heed's estimate of
// when a slot frees; when the estimate was too short, it defers once its
// time is used, never later.
func TestLimitInFlightDefers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &slowRT{took: 5 * time.Second}
		tr := heed.New(inner, heed.WithPolicy(heed.Policy{Limit: heed.Limit{InFlight: 1}}))
		// The first send, alone, teaches how long a send takes.
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/a", nil))
		require.NoError(t, err)
		resp.Body.Close()

		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/b", nil))
			if assert.NoError(t, err) {
				resp.Body.Close()
			}
		}()
		synctest.Wait() // b holds the slot
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err = tr.RoundTrip(newRequest(t, ctx, "GET", "https://api.example/c", nil))
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 0, de.Attempts)
		assert.Equal(t, "concurrency limit", de.Reason)
		assert.Equal(t, start, time.Now(), "at once")
		assert.Equal(t, start.Add(5*time.Second), de.RetryAt, "the estimate: one send's time")
		wg.Wait()
		assert.Equal(t, int32(2), inner.sends.Load())
	})
}

// TestLimitSlotHeldUntilTheBodyIsClosed: a send's slot is given back when
// its response body is closed, not when its headers arrive.
func TestLimitSlotHeldUntilTheBodyIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &slowRT{}
		tr := heed.New(inner, heed.WithPolicy(heed.Policy{Limit: heed.Limit{InFlight: 1}}))
		first, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/stream", nil))
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/next", nil))
			if assert.NoError(t, err) {
				resp.Body.Close()
			}
		}()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.Equal(t, int32(1), inner.sends.Load(), "the next send waits while the first body is open")
		first.Body.Close()
		first.Body.Close() // a second Close gives back nothing more
		<-done
		assert.Equal(t, int32(2), inner.sends.Load())
	})
}

// TestWaitingLineIsBounded: while a scope is held, at most MaxWaiting
// RoundTrips wait at its gate; the rest defer at once, unsent, and say so.
func TestWaitingLineIsBounded(t *testing.T) {
	for _, bound := range []int{1, 3, 5} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tooMany("Retry-After", "10"), ok200)
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 1, MaxWaiting: bound}))
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/first", nil))
				require.NoError(t, err)
				resp.Body.Close()
				start := time.Now()
				const n = 8
				errs := sendAll(t, tr, n)
				var queueFull, served int
				for _, err := range errs {
					var de *heed.DeferredError
					switch {
					case err == nil:
						served++
					case errors.As(err, &de):
						assert.Equal(t, "queue full", de.Reason)
						assert.Equal(t, 0, de.Attempts)
						assert.False(t, de.RetryAt.Before(start.Add(10*time.Second)))
						queueFull++
					default:
						t.Errorf("unexpected error: %v", err)
					}
				}
				assert.Equal(t, bound, served, "the waiting line held the bound")
				assert.Equal(t, n-bound, queueFull)
				assert.Len(t, rt.requests(), 1+bound)
			})
		})
	}
}

// TestLimitYieldsToTheServer: a known rate above what the server allows
// still waits out the server's hold.
func TestLimitYieldsToTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(tooMany("Retry-After", "3"), ok200)
		tr := heed.New(rt, heed.WithPolicy(heed.Policy{Limit: heed.Limit{Rate: 1000, Burst: 100, InFlight: 50}}))
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/first", nil))
		require.NoError(t, err)
		resp.Body.Close()
		for _, err := range sendAll(t, tr, 5) {
			require.NoError(t, err)
		}
		for _, s := range rt.requests()[1:] {
			assert.GreaterOrEqual(t, s.at.Sub(start), 3*time.Second)
		}
	})
}

// TestLimitSlotSurvivesAPanic: a panic in the inner transport gives the
// send's slot back, so the next request is not refused a place for good.
func TestLimitSlotSurvivesAPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if calls.Add(1) == 1 {
				panic("inner transport bug")
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		tr := heed.New(inner, heed.WithPolicy(heed.Policy{Limit: heed.Limit{InFlight: 1}}))
		assert.PanicsWithValue(t, "inner transport bug", func() {
			_, _ = tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/a", nil))
		})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "https://api.example/b", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, int32(2), calls.Load())
	})
}

// TestLimitKeepsAnUpgradedBodyWritable: a 101 Switching Protocols answer's
// body is the connection, an io.ReadWriteCloser; kept to a Limit, or
// checked at the wire, it stays one, as WebSocket clients need.
func TestLimitKeepsAnUpgradedBodyWritable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/warm" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(rw, buf); err == nil {
			_, _ = conn.Write(buf)
		}
	}))
	defer srv.Close()
	for _, name := range []string{"Limit", "wire check"} {
		t.Run(name, func(t *testing.T) {
			p := heed.Policy{MaxAttempts: 1}
			if name == "Limit" {
				p.Limit = heed.Limit{InFlight: 2}
			}
			inner := &http.Transport{}
			defer inner.CloseIdleConnections()
			tr := heed.New(inner, heed.WithPolicy(p))
			if name == "wire check" {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", srv.URL+"/warm", nil))
				require.NoError(t, err)
				resp.Body.Close()
				time.Sleep(1100 * time.Millisecond) // the hold ends; the scope stays one lately throttled
			}
			req := newRequest(t, t.Context(), "GET", srv.URL+"/upgrade", nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "echo")
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
			rw, ok := resp.Body.(io.ReadWriteCloser)
			require.True(t, ok, "the body is still writable: %T", resp.Body)
			_, err = rw.Write([]byte("hello"))
			require.NoError(t, err)
			got := make([]byte, 5)
			_, err = io.ReadFull(rw, got)
			require.NoError(t, err)
			assert.Equal(t, "hello", string(got))
			require.NoError(t, rw.Close())
		})
	}
}

// TestWaitingLineBoundsTheInFlightCap: behind a Limit's InFlight cap, too,
// at most MaxWaiting RoundTrips of a scope wait; the rest defer at once.
func TestWaitingLineBoundsTheInFlightCap(t *testing.T) {
	for _, bound := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := &slowRT{took: time.Second}
				tr := heed.New(inner, heed.WithPolicy(heed.Policy{MaxAttempts: 1, MaxWaiting: bound, Limit: heed.Limit{InFlight: 1}}))
				const n = 6
				errs := make(chan error, n)
				for i := range n {
					go func() {
						resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", fmt.Sprintf("https://api.example/v1/x/%d", i), nil))
						if err == nil {
							resp.Body.Close()
						}
						errs <- err
					}()
					synctest.Wait() // one at a time, in order
				}
				var served, full int
				for range n {
					var de *heed.DeferredError
					switch err := <-errs; {
					case err == nil:
						served++
					case errors.As(err, &de) && de.Reason == "queue full":
						assert.Equal(t, 0, de.Attempts)
						full++
					default:
						t.Errorf("unexpected error: %v", err)
					}
				}
				assert.Equal(t, 1+bound, served, "one in flight and the waiting line")
				assert.Equal(t, n-1-bound, full)
				assert.Equal(t, int32(1+bound), inner.sends.Load())
			})
		})
	}
}
