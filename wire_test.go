package heed_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
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

// TestNoSendWrittenInsideAHoldLearnedWhileDialing checks at the server:
// a send that passed the gate and was still dialing when another send of
// its scope was throttled is not written before that hold ends, or is
// deferred unsent when the wait does not fit its time. Real connections on
// loopback; the second connection's dial is slowed, as a TLS handshake to
// a far server is. The hold is the scope's first, or follows an earlier
// throttle.
func TestNoSendWrittenInsideAHoldLearnedWhileDialing(t *testing.T) {
	tests := []struct {
		name     string
		hint     int           // seconds, of the throttle learned while dialing
		dial     time.Duration // how long the slow dial takes
		deadline time.Duration // the dialing request's time; 0: none
		first    bool          // the scope's first throttle: no earlier one
	}{
		{"hint 1s, dial 250ms", 1, 250 * time.Millisecond, 0, false},
		{"hint 2s, dial 400ms", 2, 400 * time.Millisecond, 0, false},
		{"hint 2s, no time to wait: deferred unsent", 2, 250 * time.Millisecond, time.Second, false},
		{"first hold, hint 1s, dial 250ms", 1, 250 * time.Millisecond, 0, true},
		{"first hold, hint 3s, dial 500ms", 3, 500 * time.Millisecond, 0, true},
		{"first hold, hint 2s, no time to wait: deferred unsent", 2, 250 * time.Millisecond, time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			arrived := map[string]time.Time{}
			var throttledAt time.Time // when the server answered the throttle
			aArrived := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				arrived[r.URL.Path] = time.Now()
				mu.Unlock()
				switch r.URL.Path {
				case "/warm":
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
				case "/a":
					close(aArrived)
					time.Sleep(80 * time.Millisecond) // B passes the gate meanwhile
					mu.Lock()
					throttledAt = time.Now()
					mu.Unlock()
					w.Header().Set("Retry-After", strconv.Itoa(tt.hint))
					// A body that ends later keeps the connection busy
					// until heed has read the headers: net/http would
					// otherwise give the freed connection to the waiting
					// send within microseconds of the answer's arrival,
					// before any client could have read it.
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(http.StatusTooManyRequests)
					w.(http.Flusher).Flush()
					time.Sleep(150 * time.Millisecond)
					_, _ = w.Write([]byte("<html>slow down</html>"))
				default:
					w.WriteHeader(http.StatusOK)
				}
			}))
			defer srv.Close()
			var dials atomic.Int32
			inner := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if dials.Add(1) >= 2 {
					time.Sleep(tt.dial)
				}
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
			defer inner.CloseIdleConnections()
			tr := heed.New(inner, heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
			get := func(ctx context.Context, path string) (*http.Response, error) {
				req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
				require.NoError(t, err)
				return tr.RoundTrip(req)
			}

			if !tt.first {
				// A throttle first: the scope is one a herd is being
				// throttled on.
				resp, err := get(t.Context(), "/warm")
				require.NoError(t, err)
				resp.Body.Close()
				time.Sleep(1100 * time.Millisecond)
			}

			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := get(t.Context(), "/a") // on the idle connection
				if assert.NoError(t, err) {
					resp.Body.Close()
				}
			}()
			<-aArrived // A has the idle connection: B dials one of its own
			ctx := t.Context()
			if tt.deadline > 0 {
				c, cancel := context.WithTimeout(ctx, tt.deadline)
				defer cancel()
				ctx = c
			}
			start := time.Now()
			resp, err := get(ctx, "/b") // passes the gate, then dials slowly
			wg.Wait()

			mu.Lock()
			defer mu.Unlock()
			holdEnd := throttledAt.Add(time.Duration(tt.hint) * time.Second)
			if tt.deadline > 0 {
				checkDeferredUnwritten(t, err, holdEnd, time.Since(start), tt.deadline)
				_, sent := arrived["/b"]
				assert.False(t, sent, "the server never saw the deferred send")
				return
			}
			require.NoError(t, err)
			resp.Body.Close()
			require.GreaterOrEqual(t, dials.Load(), int32(2), "the send dialed a connection of its own")
			assert.False(t, arrived["/b"].Before(holdEnd), "written %v before the hold's end", holdEnd.Sub(arrived["/b"]))
		})
	}
}

// checkDeferredUnwritten asserts that err defers a send with nothing of it
// written, no earlier than holdEnd, at once (took, of the send's deadline).
func checkDeferredUnwritten(t *testing.T, err error, holdEnd time.Time, took, deadline time.Duration) {
	t.Helper()
	var de *heed.DeferredError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 0, de.Attempts, "nothing was written")
	assert.False(t, de.RetryAt.Before(holdEnd), "RetryAt %v is not before the hold's end %v", de.RetryAt, holdEnd)
	assert.Less(t, took, deadline, "deferred at once, not at the deadline")
}

// dialingRT is an in-memory transport that dials a connection of its own
// for each send, as net/http does: it takes the dial's time, tells the
// send's GotConn, and then writes the request whatever the send's context,
// unless the connection was made to refuse writes. Its answers wait
// answerAfter before they return.
type dialingRT struct {
	dial        func(path string) time.Duration
	answerAfter func(path string) time.Duration
	answer      func(path string) (status int, retryAfter string)
	// hintHeader names the header retryAfter goes in; "": Retry-After.
	hintHeader string

	mu      sync.Mutex
	written map[string]time.Time
	refused map[string]bool // sends whose connection refused the write
}

// refusingConn is a connection that refuses every write once its write
// deadline has passed.
type refusingConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
}

func (c *refusingConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return nil
}

func (c *refusingConn) refuses() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.deadline.IsZero() && !time.Now().Before(c.deadline)
}

func (d *dialingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	path := r.URL.Path
	time.Sleep(d.dial(path))
	conn := &refusingConn{}
	if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: conn})
	}
	d.mu.Lock()
	if conn.refuses() {
		d.refused[path] = true
		d.mu.Unlock()
		return nil, errors.New("write: i/o timeout")
	}
	d.written[path] = time.Now()
	d.mu.Unlock()
	time.Sleep(d.answerAfter(path))
	status, retryAfter := d.answer(path)
	h := http.Header{}
	if retryAfter != "" {
		h.Set(cmp.Or(d.hintHeader, "Retry-After"), retryAfter)
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
}

// TestAHoldLearnedWhileASendWaitsForItsTokenAtTheWireHoldsIt: a send
// caught at the wire by a hold goes in the scope's pace once the hold
// ends; a hold learned while it waits for its token there holds it too,
// and it is not written before that hold's end. In a bubble: a herd's
// throttle with a hint in milliseconds sets a hold and a pace of one send
// per hint; queued sends take the first tokens; B, still dialing, is
// caught by the hold and takes the token after theirs; meanwhile a late
// answer to a send made before the throttle sets a longer hold, which
// lowers no pace (it tells of an earlier burst), and covers B's token.
func TestAHoldLearnedWhileASendWaitsForItsTokenAtTheWireHoldsIt(t *testing.T) {
	tests := []struct {
		name   string
		hint   time.Duration // the herd's throttle, answered at 10 ms: the hold and the pace's interval
		queued int           // sends queued for the pace before B
		dial   time.Duration // B's dial, ending inside the first hold
		late   time.Duration // when the late throttle is answered, while B waits for its token
		hold   time.Duration // its hint
	}{
		{"hint 200ms, 3 queued", 200 * time.Millisecond, 3, 150 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond},
		{"hint 100ms, 5 queued", 100 * time.Millisecond, 5, 80 * time.Millisecond, 300 * time.Millisecond, 800 * time.Millisecond},
		{"hint 300ms, 2 queued", 300 * time.Millisecond, 2, 250 * time.Millisecond, 450 * time.Millisecond, 700 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var lateAt time.Time // when the late throttle was answered
				rt := &dialingRT{
					written: map[string]time.Time{}, refused: map[string]bool{},
					hintHeader: "Retry-After-Ms",
					dial: func(path string) time.Duration {
						if path == "/b" {
							return tt.dial
						}
						return 0
					},
					answerAfter: func(path string) time.Duration {
						switch {
						case path == "/throttled":
							return 10 * time.Millisecond
						case path == "/late":
							return tt.late - time.Since(start)
						case strings.HasPrefix(path, "/herd"):
							return 20 * time.Millisecond
						}
						return 0
					},
					answer: func(path string) (int, string) {
						switch path {
						case "/throttled":
							return http.StatusTooManyRequests, strconv.FormatInt(tt.hint.Milliseconds(), 10)
						case "/late":
							lateAt = time.Now()
							return http.StatusTooManyRequests, strconv.FormatInt(tt.hold.Milliseconds(), 10)
						}
						return http.StatusOK, ""
					},
				}
				// Hints in milliseconds are waited as given.
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 1, MinWait: time.Millisecond}))
				get := func(path string) {
					req, err := http.NewRequestWithContext(t.Context(), "GET", "http://api.test"+path, nil)
					require.NoError(t, err)
					if resp, err := tr.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
				}
				var wg sync.WaitGroup
				// The herd, the late send and B go at once, in that order,
				// so that B takes the sends in flight to a new high and is
				// checked at the wire (the first send of a scope is not);
				// one of the herd is throttled at 10 ms, the others still
				// in flight.
				for _, path := range []string{"/throttled", "/herd1", "/herd2", "/herd3", "/late", "/b"} {
					wg.Go(func() { get(path) })
					synctest.Wait()
				}
				time.Sleep(12 * time.Millisecond)
				for i := range tt.queued {
					wg.Go(func() { get("/queued" + strconv.Itoa(i)) })
				}
				wg.Wait()

				require.False(t, lateAt.IsZero(), "the late send was throttled")
				first := start.Add(10*time.Millisecond + tt.hint)
				holdEnd := lateAt.Add(tt.hold)
				written, wrote := rt.written["/b"]
				require.True(t, wrote, "B's send was written")
				assert.False(t, written.Before(first), "B was caught by the first hold: written %v before its end", first.Sub(written))
				require.False(t, written.Before(lateAt), "B still waited for its token when the late hold came")
				assert.False(t, written.Before(holdEnd), "written %v before the end of the hold learned while it waited for its token", holdEnd.Sub(written))
				for i := range tt.queued {
					w, ok := rt.written["/queued"+strconv.Itoa(i)]
					require.True(t, ok, "queued send %d was written", i)
					assert.True(t, w.Before(lateAt) || !w.Before(holdEnd), "queued send %d written %v inside the late hold", i, w.Sub(lateAt))
				}
			})
		})
	}
}

// TestNoSendWrittenInsideAHoldLearnedElsewhere: a send that passed its
// gate is not written before a hold set meanwhile by another Transport
// sharing the gate, whether it learned of the hold while dialing, while
// waiting out a hold of its own at the wire, or while waiting for a Limit
// slot; or it is deferred with its connection made to refuse the write,
// so that nothing of it is written. Both heed's own gate and a plain Gate
// of the user's, which is asked only after a wait.
func TestNoSendWrittenInsideAHoldLearnedElsewhere(t *testing.T) {
	tests := []struct {
		name     string
		warm     bool          // B was throttled a while ago: its sends are checked at the wire
		plain    bool          // the gate is a plain Gate, not heed's own
		own      int           // seconds of B's own hold, answered at 50ms; 0: none
		inFlight time.Duration // B's Limit{InFlight: 1} slot is taken this long; 0: no Limit
		dial     time.Duration // how long B's send dials
		hint     int           // seconds, of A's throttle, answered at 100ms
		deadline time.Duration // B's send's time; 0: none
	}{
		{"while dialing, hint 1s", true, false, 0, 0, 300 * time.Millisecond, 1, 0},
		{"while dialing, hint 3s, dial 600ms", true, false, 0, 0, 600 * time.Millisecond, 3, 0},
		{"while dialing, no time to wait: deferred unwritten", true, false, 0, 0, 300 * time.Millisecond, 2, time.Second},
		{"while waiting out its own hold at the wire, hint 2s", true, false, 1, 0, 200 * time.Millisecond, 2, 0},
		{"while waiting out its own hold, plain gate, hint 3s", true, true, 1, 0, 200 * time.Millisecond, 3, 0},
		{"while waiting out its own hold, plain gate: deferred unwritten", true, true, 1, 0, 200 * time.Millisecond, 3, 2 * time.Second},
		{"while waiting for a Limit slot, hint 2s", false, false, 0, 800 * time.Millisecond, 0, 2, 0},
		{"while waiting for a Limit slot, plain gate, hint 1s", false, true, 0, 500 * time.Millisecond, 0, 1, 0},
		{"while waiting for a Limit slot, no time to wait: deferred unsent", false, false, 0, 500 * time.Millisecond, 0, 2, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var throttledAt time.Time // when A's throttle was answered
				rt := &dialingRT{
					written: map[string]time.Time{}, refused: map[string]bool{},
					dial: func(path string) time.Duration {
						if path == "/b" {
							return tt.dial
						}
						return 0
					},
					answerAfter: func(path string) time.Duration {
						switch path {
						case "/a":
							return 100 * time.Millisecond
						case "/own":
							return 50 * time.Millisecond
						case "/slot":
							return tt.inFlight
						}
						return 0
					},
					answer: func(path string) (int, string) {
						switch path {
						case "/warm":
							return http.StatusTooManyRequests, "1"
						case "/a":
							throttledAt = time.Now()
							return http.StatusTooManyRequests, strconv.Itoa(tt.hint)
						case "/own":
							return http.StatusTooManyRequests, strconv.Itoa(tt.own)
						}
						return http.StatusOK, ""
					},
				}
				var gate heed.Gate = heed.NewGate()
				if tt.plain {
					gate = designPlainGate{gate}
				}
				policy := heed.Policy{MaxAttempts: 1}
				a := heed.New(rt, heed.WithGate(gate), heed.WithPolicy(policy))
				if tt.inFlight > 0 {
					policy.Limit = heed.Limit{InFlight: 1}
				}
				b := heed.New(rt, heed.WithGate(gate), heed.WithPolicy(policy))
				get := func(tr *heed.Transport, ctx context.Context, path string) error {
					req, err := http.NewRequestWithContext(ctx, "GET", "http://api.test"+path, nil)
					require.NoError(t, err)
					resp, err := tr.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					}
					return err
				}
				if tt.warm {
					require.NoError(t, get(b, t.Context(), "/warm"))
					time.Sleep(1100 * time.Millisecond)
				}
				var wg sync.WaitGroup
				if tt.own > 0 {
					// B's own throttle, answered while its next send dials:
					// that send waits it out at the wire.
					wg.Go(func() { _ = get(b, t.Context(), "/own") })
				}
				if tt.inFlight > 0 {
					wg.Go(func() { _ = get(b, t.Context(), "/slot") }) // takes the one slot
				}
				synctest.Wait()
				wg.Go(func() { _ = get(a, t.Context(), "/a") })
				start := time.Now()
				err := get(b, withDeadline(t, t.Context(), tt.deadline), "/b")
				wg.Wait()

				require.False(t, throttledAt.IsZero(), "A was throttled")
				holdEnd := throttledAt.Add(time.Duration(tt.hint) * time.Second)
				written, wrote := rt.written["/b"]
				if tt.deadline > 0 {
					checkDeferredUnwritten(t, err, holdEnd, time.Since(start), tt.deadline)
					assert.False(t, wrote, "the deferred send was never written")
					return
				}
				require.NoError(t, err)
				require.True(t, wrote, "B's send was written")
				assert.False(t, rt.refused["/b"], "B's connection was left writable")
				assert.False(t, written.Before(holdEnd), "written %v before the hold's end", holdEnd.Sub(written))
				assert.Less(t, written.Sub(holdEnd), 50*time.Millisecond, "written once the hold ended, not later")
			})
		})
	}
}

// TestAnswerCarriesTheRequestSent: an answer's Request is the request heed
// sent, as the bare transport's is, not the copy whose context carried
// heed's checks to the wire (a herd forming) or its observer's count of
// connections, which heed ends when the body is closed.
func TestAnswerCarriesTheRequestSent(t *testing.T) {
	tests := []struct {
		name  string
		opts  []heed.Option
		clone bool // next sends a clone of its own, as oauth2.Transport does
	}{
		{"no observer", nil, false},
		{"an observer", []heed.Option{heed.WithObserver(func(heed.Event) {})}, false},
		{"a next that clones", nil, true},
		{"a next that clones, an observer", []heed.Option{heed.WithObserver(func(heed.Event) {})}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inA := make(chan struct{})
			release := make(chan struct{})
			inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.URL.Path == "/a" {
					close(inA)
					<-release // in flight while /b goes: a herd forming
				}
				if tt.clone {
					r = r.Clone(r.Context())
					r.Header.Set("Authorization", "Bearer t")
				}
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
			})
			tr := heed.New(inner, tt.opts...)
			reqA, err := http.NewRequestWithContext(t.Context(), "GET", "http://calm.test/a", nil)
			require.NoError(t, err)
			var wg sync.WaitGroup
			var respA *http.Response
			wg.Go(func() {
				var err error
				respA, err = tr.RoundTrip(reqA)
				assert.NoError(t, err)
			})
			<-inA
			reqB, err := http.NewRequestWithContext(t.Context(), "GET", "http://calm.test/b", nil)
			require.NoError(t, err)
			respB, err := tr.RoundTrip(reqB) // the herd's second send: checked at the wire
			require.NoError(t, err)
			close(release)
			wg.Wait()
			require.NotNil(t, respA)
			require.NoError(t, respA.Body.Close())
			require.NoError(t, respB.Body.Close())
			if tt.clone {
				assert.Equal(t, "Bearer t", respB.Request.Header.Get("Authorization"), "next's own clone is kept")
				assert.Same(t, reqA.Context(), respA.Request.Context(), "a lone send's answer")
			} else {
				assert.Same(t, reqA, respA.Request, "a lone send's answer")
				assert.Same(t, reqB, respB.Request, "a forming herd's send's answer")
			}
			assert.Same(t, reqB.Context(), respB.Request.Context(), "a forming herd's send's answer has the caller's context")
			assert.NoError(t, respB.Request.Context().Err(), "alive once the body is closed")
		})
	}
}

// TestSendsCaughtAtTheWireGoInThePace: a herd's sends still dialing when
// its first throttle is learned wait out the hold at the wire, then go in
// the scope's pace, as sends that waited at the gate do, not all at the
// hold's end. A token bucket of burst b refilling at 4b a second serves
// the first b sends and refuses the next, answered in a millisecond; the
// rest of the herd dials meanwhile. Written together at the hold's end they would
// overrun the refilled burst and start another hold; paced, none is
// refused but the one send past the pace that fits the rate.
func TestSendsCaughtAtTheWireGoInThePace(t *testing.T) {
	tests := []struct {
		herd, burst int
		hint        int // seconds
		rounds      int // requests each goroutine sends, one after another
	}{
		{16, 4, 1, 1},
		{24, 6, 2, 1},
		{12, 2, 1, 1},
		// Long enough for the pace to fit the rate: the overshoot is a
		// send caught at the wire, which went after the hold, and the
		// release fits the rate from it rather than taking it for one of
		// the first herd's late answers (and then fitting from a second
		// overshoot, a hold later).
		{12, 2, 1, 4},
		{48, 2, 1, 1},
		{64, 4, 1, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("herd %d, burst %d, hint %ds, %d rounds", tt.herd, tt.burst, tt.hint, tt.rounds), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var mu sync.Mutex
				tokens, last := float64(tt.burst), start
				fill := 4 * float64(tt.burst) // a second
				var written []time.Time
				var holdEnd time.Time
				var holds [][2]time.Time // each refusal: when the client had it, and the time it gave
				refusedAfter := 0        // refusals of sends written after the first hold's end
				arrived := 0
				rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					arrived++
					dialing := arrived > tt.burst+1 && arrived <= tt.herd
					mu.Unlock()
					if dialing {
						time.Sleep(50 * time.Millisecond) // the refusal comes back meanwhile
					}
					conn := &refusingConn{}
					if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.GotConn != nil {
						trace.GotConn(httptrace.GotConnInfo{Conn: conn})
					}
					if conn.refuses() {
						return nil, errors.New("write: i/o timeout")
					}
					mu.Lock()
					now := time.Now()
					written = append(written, now)
					tokens = math.Min(tokens+now.Sub(last).Seconds()*fill, float64(tt.burst))
					last = now
					h := http.Header{}
					status := http.StatusOK
					if tokens >= 1 {
						tokens--
					} else {
						status = http.StatusTooManyRequests
						h.Set("Retry-After", strconv.Itoa(tt.hint))
						told := now.Add(time.Millisecond) // the answer's way back, below
						holds = append(holds, [2]time.Time{told, told.Add(time.Duration(tt.hint) * time.Second)})
						if holdEnd.IsZero() {
							holdEnd = now.Add(time.Duration(tt.hint) * time.Second)
						} else if !now.Before(holdEnd) {
							refusedAfter++
						}
					}
					mu.Unlock()
					time.Sleep(time.Millisecond) // the answer's way back
					return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
				})
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 10}))
				var wg sync.WaitGroup
				for range tt.herd {
					wg.Go(func() {
						for range tt.rounds {
							req, err := http.NewRequestWithContext(t.Context(), "GET", "https://bucket.test/", nil)
							if !assert.NoError(t, err) {
								return
							}
							resp, err := tr.RoundTrip(req)
							if assert.NoError(t, err) {
								resp.Body.Close()
								assert.Equal(t, http.StatusOK, resp.StatusCode)
							}
						}
					})
				}
				wg.Wait()

				mu.Lock()
				defer mu.Unlock()
				require.False(t, holdEnd.IsZero(), "the burst was overrun: the check is real")
				together := 0 // written in the millisecond the hold ends
				for _, w := range written {
					assert.False(t, w.Before(holdEnd) && w.After(start.Add(100*time.Millisecond)), "written %v inside the hold", w.Sub(start))
					if !w.Before(holdEnd) && w.Sub(holdEnd) < time.Millisecond {
						together++
					}
				}
				// The sends caught at the wire count in the release's
				// episode, and its pace climbs on them: the herd is done
				// within 1.6× of the first hint and what the bucket then
				// serves, and the hint of the one overshoot allowed above.
				// (Timed by when they passed the gate, before the hold, they
				// were not the episode's, and the pace past the burst never
				// climbed: 48 sends at burst 2 took 1.78×, with none.)
				took := written[len(written)-1].Sub(start)
				ideal := time.Duration(tt.hint)*time.Second + time.Duration(float64(tt.herd*tt.rounds-tt.burst)/fill*float64(time.Second))
				t.Logf("last written %v after the start, %.2f× of %v, %d refused after the hold", took, took.Seconds()/ideal.Seconds(), ideal, refusedAfter)
				overshoot := time.Duration(refusedAfter*tt.hint) * time.Second
				assert.LessOrEqual(t, took.Seconds(), 1.6*ideal.Seconds()+overshoot.Seconds(), "within 1.6× of the hint and the bucket's rate, and an overshoot's hint")
				assert.LessOrEqual(t, together, tt.burst, "at most the burst goes as the hold ends")
				for _, w := range written {
					for _, h := range holds {
						// As above, the first herd's sends that dial within its
						// first 100 ms are not all checked (docs/pacing.md, the
						// two windows left unchecked).
						assert.False(t, w.After(h[0]) && w.Before(h[1]) && w.After(start.Add(100*time.Millisecond)), "written %v, inside a hold the client had from %v to %v", w.Sub(start), h[0].Sub(start), h[1].Sub(start))
					}
				}
				// The sends caught at the wire are the episode's, timed by
				// when they went: the release's pace past the burst climbs
				// on them and overshoots once to fit the rate (release.go).
				assert.LessOrEqual(t, refusedAfter, 1, "no send refused after the hold but the overshoot that fits the rate")

			})
		})
	}
}
