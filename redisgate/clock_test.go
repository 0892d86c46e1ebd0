package redisgate

import (
	"context"
	"errors"
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

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// skewed is a process whose clock reads skew ahead of the true time, as
// its Transport sees its gate: the times the Transport gives the gate are
// read on the process's clock, and those the gate gives back are too.
// The Transport reads the true clock, so skewed shifts every time between
// the two, and the gate itself reads the skewed clock (g.now). With seen
// set, it records the gate's asks and holds, as process proc's.
type skewed struct {
	g    *gate
	skew time.Duration
	seen *gateSeen
	proc int
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
	s.seen.ask(ctx)
	nb, err := s.g.NotBefore(ctx, scope)
	return s.out(nb), err
}

func (s skewed) Hold(ctx context.Context, scope string, until time.Time) error {
	asked := time.Now()
	err := s.g.Hold(ctx, scope, s.in(until))
	s.seen.held(s.proc, asked, until)
	return err
}

func (s skewed) Take(ctx context.Context, scope string) (time.Time, error) {
	s.seen.ask(ctx)
	nb, err := s.g.Take(ctx, scope)
	return s.out(nb), err
}

// Pace shares the scope's pace, as redisgate does: its state is stamped
// by the Transports, which read the true clock here, so it needs no shift.
// Without it each process paces alone, as no fleet on redisgate does.
func (s skewed) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	return s.g.Pace(ctx, scope, update)
}

func (s skewed) Done(ctx context.Context, scope string, q *heed.Quota, served bool) error {
	if q != nil {
		q = &heed.Quota{Remaining: q.Remaining, Reset: s.in(q.Reset)}
	}
	return s.g.Done(ctx, scope, q, served)
}

// gateSeen records what a fleet's gates were asked, on the true clock:
// when each request asked for a send (Take or NotBefore, keyed by its
// context's requestKey), and each hold, when it was asked and when the
// gate had it. A nil gateSeen records nothing.
type gateSeen struct {
	mu    sync.Mutex
	asks  map[int64][]time.Time
	holds []seenHold
}

// seenHold is a hold a process asked of its gate, until until (true
// clock): known to the process from asked, to the fleet from stored.
type seenHold struct {
	proc          int
	asked, stored time.Time
	until         time.Time
}

// requestKey keys a request's number in its context.
type requestKey struct{}

func (g *gateSeen) ask(ctx context.Context) {
	if g == nil {
		return
	}
	id, _ := ctx.Value(requestKey{}).(int64)
	g.mu.Lock()
	g.asks[id] = append(g.asks[id], time.Now())
	g.mu.Unlock()
}

func (g *gateSeen) held(proc int, asked, until time.Time) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.holds = append(g.holds, seenHold{proc: proc, asked: asked, stored: time.Now(), until: until})
	g.mu.Unlock()
}

// lastAsk returns when request id last asked its gate at or before t.
func (g *gateSeen) lastAsk(id int64, t time.Time) time.Time {
	var last time.Time
	for _, a := range g.asks[id] {
		if !a.After(t) && a.After(last) {
			last = a
		}
	}
	return last
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
// other skews; the first sends most), sends nothing before the end a
// relative hint gave once the fleet knew of it: no send whose gate was
// asked after the hold reached Redis, nor one the process holding it began
// after it knew, is written before the refusal's end. The gate measures
// every hold against Redis's clock. A send admitted while the hold was on
// its way to Redis could not know of it, and is not counted.
func TestFleetOfSkewedClocksSendsNothingEarly(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name  string
		skews []time.Duration
	}{
		{"-2s, 0, +2s", []time.Duration{-2 * time.Second, 0, 2 * time.Second}},
		{"-5s, -1s, +3s", []time.Duration{-5 * time.Second, -time.Second, 3 * time.Second}},
		{"+4s, -3s, 0", []time.Duration{4 * time.Second, -3 * time.Second, 0}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &clockWindows{limit: 20}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			inner := &http.Transport{MaxIdleConnsPerHost: 32}
			defer inner.CloseIdleConnections()

			// sent is a send as the wire saw it: its request, its
			// process, when it began and when its headers were written.
			type sent struct {
				request      int64
				proc         int
				began, wrote time.Time
			}
			var mu sync.Mutex
			var sends []*sent
			received := 0 // refusals received
			seen := &gateSeen{asks: map[int64][]time.Time{}}
			wired := func(proc int) http.RoundTripper {
				return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					id, _ := r.Context().Value(requestKey{}).(int64)
					s := &sent{request: id, proc: proc, began: time.Now()}
					mu.Lock()
					sends = append(sends, s)
					mu.Unlock()
					trace := &httptrace.ClientTrace{WroteHeaders: func() {
						mu.Lock()
						s.wrote = time.Now()
						mu.Unlock()
					}}
					resp, err := inner.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
					if err == nil && resp.Header.Get("X-Refusal") != "" {
						mu.Lock()
						received++
						mu.Unlock()
					}
					return resp, err
				})
			}

			prefix := fmt.Sprintf("skew%d:", i)
			var clients []*http.Client
			for proc, skew := range tt.skews {
				// The inferred quota, which would pace the others by the
				// windows it learned, is off: the check is of the holds.
				g := newGate(t, s, WithPrefix(prefix), WithInferredQuota(false))
				g.now = func() time.Time { return time.Now().Add(skew) }
				tr := heed.New(wired(proc), heed.WithGate(skewed{g: g, skew: skew, seen: seen, proc: proc}), heed.WithPolicy(heed.Policy{MaxAttempts: 20}))
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
					for {
						id := next.Add(1)
						if id > total {
							return
						}
						req, _ := http.NewRequestWithContext(context.WithValue(ctx, requestKey{}, id), http.MethodGet, ts.URL+"/v1/items", nil)
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

			// For each refusal, the fleet knew of it once a hold as long
			// reached Redis, and a process once it asked its gate for one.
			// A send is early when it was written before the refusal's end
			// (less a grace for the write to reach loopback: 10 ms, under
			// the race detector 50) though its gate was asked after the
			// fleet knew, or its process began it after it knew (and the
			// grace more, for the send to be on its way).
			grace := map[bool]time.Duration{false: 10 * time.Millisecond, true: 50 * time.Millisecond}[raceEnabled]
			srv.mu.Lock()
			defer srv.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			seen.mu.Lock()
			defer seen.mu.Unlock()
			early, told := 0, 0
			for _, end := range srv.ends {
				var fleet time.Time
				knew := map[int]time.Time{}
				for _, h := range seen.holds {
					if h.until.Before(end) {
						continue
					}
					if fleet.IsZero() || h.stored.Before(fleet) {
						fleet = h.stored
					}
					if k, ok := knew[h.proc]; !ok || h.asked.Before(k) {
						knew[h.proc] = h.asked
					}
				}
				if fleet.IsZero() {
					continue // the refusal was never held: no answer came back
				}
				for _, asks := range seen.asks {
					for _, a := range asks {
						if a.After(fleet) && a.Add(grace).Before(end) {
							told++ // a gate asked inside the known hold
						}
					}
				}
				for _, s := range sends {
					if s.wrote.IsZero() || !s.wrote.Add(grace).Before(end) {
						continue
					}
					k, ok := knew[s.proc]
					if seen.lastAsk(s.request, s.began).After(fleet) || ok && s.began.After(k.Add(grace)) {
						early++
						t.Logf("written %v before the end of a hold the fleet knew from %v (asked %v, began %v, process %d knew from %v)",
							end.Sub(s.wrote), fleet.Format(time.StampMicro), seen.lastAsk(s.request, s.began).Format(time.StampMicro), s.began.Format(time.StampMicro), s.proc, k.Format(time.StampMicro))
					}
				}
			}
			t.Logf("%d sends, %d refusals (%d received), gates asked %d times inside known holds, %d written inside a known hold", len(sends), len(srv.ends), received, told, early)
			assert.Positive(t, len(srv.ends), "the limit was met")
			assert.Positive(t, told, "gates were asked inside known holds: the check is real")
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
					neverMeasure(g) // never measured: offset 0
				}
				return skewed{g: g, skew: skew}
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

// TestAFailedFirstMeasureIsNotAwaited: a call made while the first clock
// measure is under way waits for it even when it fails; once it failed,
// calls take the process's clock as Redis's (no measure) and wait for
// none, until the measure is tried again a second on.
func TestAFailedFirstMeasureIsNotAwaited(t *testing.T) {
	s := startRedis(t)
	for _, delay := range []time.Duration{150 * time.Millisecond, 400 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			ctx := t.Context()
			c := s.client(t)
			c.AddHook(timeHook{delay: delay, fail: true})
			g := New(c, patient).(*gate)

			first := make(chan struct{})
			go func() {
				defer close(first)
				_, _ = g.NotBefore(ctx, "s") // starts the measure, which fails
			}()
			require.Eventually(t, func() bool { return g.clock.checked.Load() != 0 }, time.Second, time.Millisecond, "the measure started")
			began := time.Now()
			during, cancel := context.WithTimeout(ctx, 4*delay)
			defer cancel()
			_, err := g.NotBefore(during, "s")
			assert.NoError(t, err, "the measure ended before the call's own deadline")
			assert.GreaterOrEqual(t, time.Since(began), delay/2, "a call during the first measure waited for it")
			<-first

			assert.Equal(t, clockMeasure{}, g.measured(), "a failed measure leaves none: an offset of 0")
			began = time.Now()
			after, cancelAfter := context.WithTimeout(ctx, 2*delay)
			defer cancelAfter()
			_, err = g.NotBefore(after, "s")
			assert.NoError(t, err)
			assert.Less(t, time.Since(began), delay/2, "once it failed, a call waits for no measure")
		})
	}
}

// timeHook is a client hook that answers the gate's TIME calls delay late,
// as a loaded Redis or network would (the first clock measure takes three
// of them), and with an error when fail is set.
type timeHook struct {
	delay time.Duration
	fail  bool
}

func (timeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h timeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[1] == timeScript.Hash() {
			select {
			case <-time.After(h.delay):
			case <-ctx.Done():
				return ctx.Err()
			}
			if h.fail {
				err := errors.New("redisgate test: TIME refused")
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func (timeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCallsAwaitTheFirstClockMeasure: calls a gate gets while its first
// measure of the fleet's clock is under way wait for it, rather than take
// the process's clock as Redis's. A process whose clock is ahead would
// otherwise find a hold over, and admit sends, as early as its clock is
// ahead, and one whose clock is behind would write its holds that much too
// short for the fleet. Each set starts many calls at once on a fresh gate
// whose TIME answers come late.
func TestCallsAwaitTheFirstClockMeasure(t *testing.T) {
	s := startRedis(t)
	tests := []struct {
		name  string
		skew  time.Duration // of the fresh gate's clock
		delay time.Duration // of each TIME answer
		op    string        // what the fresh gate's calls are
	}{
		{"3s ahead takes", 3 * time.Second, 20 * time.Millisecond, "take"},
		{"1s ahead asks not before", time.Second, 10 * time.Millisecond, "not before"},
		{"5s ahead takes, TIME slower", 5 * time.Second, 50 * time.Millisecond, "take"},
		{"2s behind holds", -2 * time.Second, 20 * time.Millisecond, "hold"},
		{"4s behind holds, TIME faster", -4 * time.Second, 5 * time.Millisecond, "hold"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			prefix := WithPrefix(fmt.Sprintf("first%d:", i))
			right := newGate(t, s, prefix, WithInferredQuota(false))
			c := s.client(t)
			c.AddHook(timeHook{delay: tt.delay})
			fresh := New(c, patient, prefix, WithInferredQuota(false)).(*gate)
			fresh.now = func() time.Time { return time.Now().Add(tt.skew) }
			process := skewed{g: fresh, skew: tt.skew}

			const calls = 8
			until := time.Now().Add(time.Second)
			if tt.op != "hold" {
				require.NoError(t, right.Hold(ctx, "held", until))
			}
			var wg sync.WaitGroup
			found := make([]time.Time, calls)
			errs := make([]error, calls)
			for n := range calls {
				wg.Go(func() {
					switch tt.op {
					case "take":
						found[n], errs[n] = process.Take(ctx, "held")
					case "not before":
						found[n], errs[n] = process.NotBefore(ctx, "held")
					case "hold":
						errs[n] = process.Hold(ctx, fmt.Sprintf("held%d", n), until)
					}
				})
			}
			wg.Wait()
			for n := range calls {
				require.NoError(t, errs[n])
				if tt.op == "hold" {
					// The right clock finds each hold where it was put.
					nb, err := right.NotBefore(ctx, fmt.Sprintf("held%d", n))
					require.NoError(t, err)
					found[n] = nb
				}
				assert.False(t, found[n].Before(until), "call %d of %d found the hold's end at %v, not %v", n, calls, found[n].Format(time.StampMilli), until.Format(time.StampMilli))
			}
		})
	}
}

// neverMeasure keeps g from measuring its clock against Redis's: it takes
// its own as Redis's, an offset of 0.
func neverMeasure(g *gate) {
	g.clock.checked.Store(math.MaxInt64)
	g.clock.firstEnded()
}
