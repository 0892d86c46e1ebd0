package redisgate

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// skewed is a process whose clock reads skew ahead of the true time, as
// its Transport sees its gate: the times the Transport gives the gate are
// read on the process's clock, and those the gate gives back are too.
// The Transport reads the true clock, so skewed shifts every time between
// the two, and the gate itself reads the skewed clock (g.now).
type skewed struct {
	g    *gate
	skew time.Duration
}

func (s skewed) in(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(s.skew)
}

func (s skewed) out(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(-s.skew)
}

func (s skewed) NotBefore(ctx context.Context, scope string) (time.Time, error) {
	nb, err := s.g.NotBefore(ctx, scope)
	return s.out(nb), err
}

func (s skewed) Hold(ctx context.Context, scope string, until time.Time) error {
	return s.g.Hold(ctx, scope, s.in(until))
}

func (s skewed) Take(ctx context.Context, scope string) (time.Time, error) {
	nb, err := s.g.Take(ctx, scope)
	return s.out(nb), err
}

func (s skewed) Done(ctx context.Context, scope string, q *heed.Quota, served bool) error {
	if q != nil {
		q = &heed.Quota{Remaining: q.Remaining, Reset: s.in(q.Reset)}
	}
	return s.g.Done(ctx, scope, q, served)
}

// clockWindows serves limit requests in each second of the clock and
// refuses the rest with Retry-After, whole seconds to the next second,
// rounded up: a relative hint. It records each refusal's end.
type clockWindows struct {
	limit int

	mu     sync.Mutex
	second int64
	served int
	ends   []time.Time // of the refusals, each Retry-After after its answer
}

func (w *clockWindows) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	now := time.Now()
	w.mu.Lock()
	if s := now.Unix(); s != w.second {
		w.second, w.served = s, 0
	}
	if w.served < w.limit {
		w.served++
		w.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
		return
	}
	wait := int64(math.Ceil(time.Unix(w.second+1, 0).Sub(now).Seconds()))
	w.ends = append(w.ends, now.Add(time.Duration(wait)*time.Second))
	id := len(w.ends) - 1
	w.mu.Unlock()
	rw.Header().Set("Retry-After", strconv.FormatInt(wait, 10))
	rw.Header().Set("X-Refusal", strconv.Itoa(id))
	rw.WriteHeader(http.StatusTooManyRequests)
}

// TestFleetOfSkewedClocksSendsNothingEarly: a fleet of three processes
// sharing one Redis, whose clocks read 2 s behind, right and 2 s ahead (or
// other skews; the first sends most), sends nothing before a time a relative hint gave, once a
// process received it: the gate measures every hold against Redis's clock.
func TestFleetOfSkewedClocksSendsNothingEarly(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name  string
		skews []time.Duration
	}{
		{"-2s, 0, +2s", []time.Duration{-2 * time.Second, 0, 2 * time.Second}},
		{"-5s, -1s, +3s", []time.Duration{-5 * time.Second, -time.Second, 3 * time.Second}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &clockWindows{limit: 20}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			inner := &http.Transport{MaxIdleConnsPerHost: 32}
			defer inner.CloseIdleConnections()

			var mu sync.Mutex
			wrote := map[int64]time.Time{}  // when each send was written
			received := map[int]time.Time{} // when each refusal was received
			var sends atomic.Int64
			wired := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				n := sends.Add(1)
				trace := &httptrace.ClientTrace{WroteHeaders: func() {
					mu.Lock()
					wrote[n] = time.Now()
					mu.Unlock()
				}}
				resp, err := inner.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
				if err == nil {
					if id, perr := strconv.Atoi(resp.Header.Get("X-Refusal")); perr == nil {
						mu.Lock()
						received[id] = time.Now()
						mu.Unlock()
					}
				}
				return resp, err
			})

			prefix := fmt.Sprintf("skew%d:", i)
			var clients []*http.Client
			for _, skew := range tt.skews {
				// The inferred quota, which would pace the others by the
				// windows it learned, is off: the check is of the holds.
				g := newGate(t, s, WithPrefix(prefix), WithInferredQuota(false))
				g.now = func() time.Time { return time.Now().Add(skew) }
				tr := heed.New(wired, heed.WithGate(skewed{g, skew}), heed.WithPolicy(heed.Policy{MaxAttempts: 20}))
				clients = append(clients, &http.Client{Transport: tr})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const total = 120
			var next, failed atomic.Int64
			var wg sync.WaitGroup
			// The first process sends most, so that the others often
			// learn of a hold from it, through Redis, before their own.
			var senders []*http.Client
			for i, c := range clients {
				n := 4
				if i == 0 {
					n = 16
				}
				for range n {
					senders = append(senders, c)
				}
			}
			for _, client := range senders {
				wg.Go(func() {
					for next.Add(1) <= total {
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/v1/items", nil)
						resp, err := client.Do(req)
						if err != nil || resp.StatusCode != http.StatusOK {
							failed.Add(1)
						}
						if err == nil {
							resp.Body.Close()
						}
					}
				})
			}
			wg.Wait()

			// A send is early when the client wrote it after a refusal
			// was received (and a grace more, for the hold to reach Redis
			// and the others: 10 ms, under the race detector 50), and it
			// arrived before that refusal's end.
			grace := map[bool]time.Duration{false: 10 * time.Millisecond, true: 50 * time.Millisecond}[raceEnabled]
			srv.mu.Lock()
			defer srv.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			var writes []time.Time
			for _, w := range wrote {
				writes = append(writes, w)
			}
			early := 0
			for id, end := range srv.ends {
				got, ok := received[id]
				if !ok {
					continue
				}
				for _, w := range writes {
					// Written after the refusal was known, and, since a
					// write reaches loopback within the grace, arrived
					// before its end.
					if w.After(got.Add(grace)) && w.Add(grace).Before(end) {
						early++
					}
				}
			}
			t.Logf("%d sends, %d refusals, %d written inside a known hold", sends.Load(), len(srv.ends), early)
			assert.Positive(t, len(srv.ends), "the limit was met: the check is real")
			assert.Zero(t, early, "no send written inside a hold the fleet knew")
			assert.Zero(t, failed.Load(), "every request served")
		})
	}
}

// TestGatesOfSkewedClocksAgreeOnAHold: a hold one process's gate writes,
// and a spent quota's reset, end for another's at the same instant
// whatever their clocks say, within a few milliseconds. Without the fleet
// clock (the offset left at 0, as when TIME is never asked), the other
// finds them off by the difference of the clocks: a writer behind its
// reader holds the reader that much too short.
func TestGatesOfSkewedClocksAgreeOnAHold(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name           string
		writer, reader time.Duration
		noClock        bool
	}{
		{"writer 2s behind, reader right", -2 * time.Second, 0, false},
		{"writer 2s behind, reader 2s ahead", -2 * time.Second, 2 * time.Second, false},
		{"writer 2s ahead, reader 2s behind", 2 * time.Second, -2 * time.Second, false},
		{"writer 5s behind, reader 3s ahead", -5 * time.Second, 3 * time.Second, false},
		{"no fleet clock: writer 2s behind, reader right", -2 * time.Second, 0, true},
		{"no fleet clock: writer 2s behind, reader 2s ahead", -2 * time.Second, 2 * time.Second, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			process := func(skew time.Duration) skewed {
				g := newGate(t, s, WithPrefix(fmt.Sprintf("agree%d:", i)), WithInferredQuota(false))
				g.now = func() time.Time { return time.Now().Add(skew) }
				if tt.noClock {
					g.clock.checked.Store(math.MaxInt64) // never measured: offset 0
				}
				return skewed{g, skew}
			}
			writer, reader := process(tt.writer), process(tt.reader)
			// want is where the writer put an end, got where the reader
			// finds it: with the fleet clock, no earlier, and later by no
			// more than the two measures' error (half a round trip, and
			// whole milliseconds, each way); without it, earlier by the writer's lag (an
			// end a second or two away is found over: the zero time).
			check := func(want, got time.Time, what string) {
				if got.IsZero() {
					got = time.Now()
				}
				if tt.noClock {
					assert.True(t, got.Before(want.Add(-500*time.Millisecond)), "%s: found early, at %v, not %v", what, got, want)
					return
				}
				assert.False(t, got.Before(want), "%s: found at %v, not before %v", what, got, want)
				assert.Less(t, got.Sub(want), 10*time.Millisecond, "%s: found within the measures' error of %v", what, want)
			}

			until := time.Now().Add(time.Second)
			require.NoError(t, writer.Hold(ctx, "held", until))
			nb, err := reader.NotBefore(ctx, "held")
			require.NoError(t, err)
			check(until, nb, "the hold's end")

			reset := time.Now().Add(2 * time.Second)
			at, err := writer.Take(ctx, "quota")
			require.NoError(t, err)
			require.True(t, at.IsZero())
			require.NoError(t, writer.Done(ctx, "quota", &heed.Quota{Remaining: 0, Reset: reset}, true))
			at, err = reader.Take(ctx, "quota")
			require.NoError(t, err)
			check(reset, at, "the spent quota's reset")
		})
	}
}

// roundTripperFunc is a RoundTripper of a function.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
