package heed_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/heed-go/heed"
)

var (
	ok200     = reply{status: 200, body: "ok"}
	tooMany   = func(h ...string) reply { return reply{status: 429, header: hdr(h...), body: `{"error":"slow down"}`} }
	boom500   = reply{status: 500, body: "boom"}
	resetErr  = &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	refuseErr = &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
)

// exact is a policy whose waits are exact, for timing tests.
func exact(p heed.Policy) heed.Policy {
	if p.Backoff == nil {
		p.Backoff = heed.Constant(time.Second)
	}
	return p
}

func TestRetryWaitsExactlyTheHint(t *testing.T) {
	tests := []struct {
		name    string
		policy  heed.Policy
		replies []reply
		gaps    []time.Duration
	}{
		{"retry-after seconds", heed.Policy{}, []reply{tooMany("Retry-After", "3"), ok200}, []time.Duration{3 * time.Second}},
		{"hint below MinWait is raised", heed.Policy{MinWait: 2 * time.Second}, []reply{tooMany("Retry-After", "1"), ok200}, []time.Duration{2 * time.Second}},
		{"zero hint becomes MinWait", heed.Policy{}, []reply{tooMany("Retry-After", "0"), ok200}, []time.Duration{time.Second}},
		{"no hint uses backoff of retry n", heed.Policy{Backoff: func(n int) time.Duration { return time.Duration(n) * time.Second }},
			[]reply{tooMany(), tooMany(), tooMany(), ok200}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
		{"ambiguous GET is retried with backoff", heed.Policy{}, []reply{boom500, ok200}, []time.Duration{time.Second}},
		{"transient dial error is retried", heed.Policy{}, []reply{{err: refuseErr}, ok200}, []time.Duration{time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tt.replies...)
				tr := heed.New(rt, heed.WithPolicy(exact(tt.policy)))
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/x", nil))
				require.NoError(t, err)
				assert.Equal(t, 200, resp.StatusCode)
				assert.Equal(t, "ok", readBody(t, resp))
				assert.Equal(t, tt.gaps, rt.gaps())
			})
		})
	}
}

func TestJitterOnlyAfterHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 50 {
			rt := script(tooMany("Retry-After", "2"), ok200)
			tr := heed.New(rt, heed.WithPolicy(heed.Policy{Jitter: 500 * time.Millisecond, Scope: "s"}), heed.WithGate(heed.NewGate()))
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			resp.Body.Close()
			g := rt.gaps()
			require.Len(t, g, 1)
			assert.GreaterOrEqual(t, g[0], 2*time.Second, "never before the hint")
			assert.LessOrEqual(t, g[0], 2500*time.Millisecond)
		}
	})
}

func TestDeliverAndTerminalReturnAsIs(t *testing.T) {
	tests := []struct {
		name   string
		reply  reply
		status int
	}{
		{"2xx", reply{status: 201, body: "made"}, 201},
		{"3xx", reply{status: 304}, 304},
		{"401 terminal", reply{status: 401, body: "who"}, 401},
		{"402 billing", reply{status: 402, body: "pay"}, 402},
		{"404", reply{status: 404, body: "gone"}, 404},
		{"501", reply{status: 501, body: "no"}, 501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := script(tt.reply, ok200)
			resp, err := heed.New(rt).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, tt.reply.body, readBody(t, resp))
			assert.Len(t, rt.requests(), 1)
		})
	}
}

func TestTransportErrorDeliveredAsIs(t *testing.T) {
	// A canceled request context is delivered without a retry.
	ctx, cancel := context.WithCancel(t.Context())
	rt := script(reply{err: context.Canceled})
	rt.before = func(*http.Request) { cancel() }
	_, err := heed.New(rt).RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, rt.requests(), 1)
}

func TestStopsAndReturnsLastAsIs(t *testing.T) {
	big := strings.Repeat("x", heed.DefaultBodyBuffer+1)
	tests := []struct {
		name     string
		policy   heed.Policy
		method   string
		header   http.Header
		body     func() io.Reader
		replies  []reply
		requests int
		status   int
		err      error
	}{
		{"attempts used up", heed.Policy{MaxAttempts: 3}, "GET", nil, nil, []reply{boom500}, 3, 500, nil},
		{"MaxAttempts 1 never retries", heed.Policy{MaxAttempts: 1}, "GET", nil, nil, []reply{tooMany("Retry-After", "1"), ok200}, 1, 429, nil},
		{"ambiguous POST not resent", heed.Policy{}, "POST", nil, nil, []reply{boom500, ok200}, 1, 500, nil},
		{"ambiguous PATCH error not resent", heed.Policy{}, "PATCH", nil, nil, []reply{{err: resetErr}, ok200}, 1, 0, resetErr},
		{"ambiguous POST with Idempotency-Key resent", heed.Policy{}, "POST", hdr("Idempotency-Key", "k1"), nil, []reply{boom500, ok200}, 2, 200, nil},
		{"ambiguous POST with X-Idempotency-Key resent", heed.Policy{}, "POST", hdr("X-Idempotency-Key", "k1"), nil, []reply{boom500, ok200}, 2, 200, nil},
		{"ambiguous POST with RetryUnsafe resent", heed.Policy{RetryUnsafe: true}, "POST", nil, nil, []reply{boom500, ok200}, 2, 200, nil},
		{"throttled POST resent", heed.Policy{}, "POST", nil, nil, []reply{tooMany("Retry-After", "1"), ok200}, 2, 200, nil},
		{"transient POST resent", heed.Policy{}, "POST", nil, nil, []reply{{err: refuseErr}, ok200}, 2, 200, nil},
		{"body past the buffer bound is not replayed", heed.Policy{}, "PUT", nil,
			func() io.Reader { return io.MultiReader(strings.NewReader(big)) }, []reply{tooMany("Retry-After", "1"), ok200}, 1, 429, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tt.replies...)
				var body io.Reader
				if tt.body != nil {
					body = tt.body()
				}
				req := newRequest(t, t.Context(), tt.method, "https://api.example/v1/jobs", body)
				for k, v := range tt.header {
					req.Header[k] = v
				}
				resp, err := heed.New(rt, heed.WithPolicy(exact(tt.policy))).RoundTrip(req)
				assert.Len(t, rt.requests(), tt.requests)
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
					assert.Nil(t, resp)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tt.status, resp.StatusCode)
				want := tt.replies[min(tt.requests, len(tt.replies))-1].body
				assert.Equal(t, want, readBody(t, resp), "the last response is delivered whole")
			})
		})
	}
}

func TestReplaySafeMethods(t *testing.T) {
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "POST", "PATCH", "CONNECT"} {
		t.Run(m, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(boom500, ok200)
				resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{}))).RoundTrip(newRequest(t, t.Context(), m, "https://api.example/r", nil))
				require.NoError(t, err)
				resp.Body.Close()
				want := 2
				if m == "POST" || m == "PATCH" || m == "CONNECT" {
					want = 1
				}
				assert.Len(t, rt.requests(), want)
			})
		})
	}
}

func TestContextDoneStopsRetrying(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		rt := script(boom500, ok200)
		rt.before = func(*http.Request) { cancel() }
		resp, err := heed.New(rt).RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
		require.NoError(t, err)
		assert.Equal(t, 500, resp.StatusCode)
		assert.Equal(t, "boom", readBody(t, resp))
		assert.Len(t, rt.requests(), 1)
	})
}

func TestContextEndsDuringSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		rt := script(tooMany("Retry-After", "10"), ok200)
		time.AfterFunc(3*time.Second, cancel)
		start := time.Now()
		resp, err := heed.New(rt).RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
		assert.Nil(t, resp)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.Len(t, rt.requests(), 1)
		require.Len(t, rt.bodies, 1)
		assert.Equal(t, 1, rt.bodies[0].closes(), "the discarded response is closed")
	})
}

func TestDeferWhenWaitDoesNotFit(t *testing.T) {
	tests := []struct {
		name     string
		policy   heed.Policy
		deadline time.Duration // 0: none
		reply    reply
		latency  time.Duration // how long the attempt takes
		defers   bool
		wait     time.Duration
		left     time.Duration
	}{
		{"hint past deadline", heed.Policy{}, 10 * time.Second, tooMany("Retry-After", "120"), 0, true, 120 * time.Second, 10 * time.Second},
		{"hint over MaxWait without deadline", heed.Policy{}, 0, tooMany("Retry-After", "61"), 0, true, 61 * time.Second, 0},
		{"hint at MaxWait is waited", heed.Policy{}, 0, tooMany("Retry-After", "60"), 0, false, 60 * time.Second, 0},
		{"custom MaxWait", heed.Policy{MaxWait: 5 * time.Second}, 0, tooMany("Retry-After", "6"), 0, true, 6 * time.Second, 0},
		{"MaxElapsed is a time limit", heed.Policy{MaxElapsed: 4 * time.Second}, 0, tooMany("Retry-After", "5"), 0, true, 5 * time.Second, 4 * time.Second},
		{"earlier of MaxElapsed and deadline", heed.Policy{MaxElapsed: 20 * time.Second}, 4 * time.Second, tooMany("Retry-After", "5"), 0, true, 5 * time.Second, 4 * time.Second},
		{"exactly fits", heed.Policy{}, 5 * time.Second, tooMany("Retry-After", "5"), 0, false, 5 * time.Second, 0},
		{"Reserve keeps time for the attempt", heed.Policy{Reserve: time.Second}, 5 * time.Second, tooMany("Retry-After", "5"), 0, true, 5 * time.Second, 5 * time.Second},
		{"attempt duration is the reserve", heed.Policy{}, 10 * time.Second, tooMany("Retry-After", "5"), 3 * time.Second, true, 5 * time.Second, 7 * time.Second},
		{"backoff that does not fit defers", heed.Policy{Backoff: heed.Constant(8 * time.Second)}, 5 * time.Second, boom500, 0, true, 8 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				rt := script(tt.reply, ok200)
				rt.before = func(*http.Request) { time.Sleep(tt.latency) }
				start := time.Now()
				resp, err := heed.New(rt, heed.WithPolicy(exact(tt.policy))).RoundTrip(newRequest(t, ctx, "GET", "https://u:p@api.example/v1/x?key=secret#frag", nil))
				if !tt.defers {
					require.NoError(t, err)
					resp.Body.Close()
					assert.Equal(t, []time.Duration{tt.wait}, rt.gaps())
					return
				}
				assert.Nil(t, resp)
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.ErrorIs(t, err, heed.ErrDeferred)
				assert.Equal(t, tt.latency, time.Since(start), "returns at once")
				assert.Len(t, rt.requests(), 1)
				assert.Equal(t, "GET", de.Method)
				assert.Equal(t, "https://api.example/v1/x", de.URL)
				assert.Equal(t, "default", de.Route)
				assert.Equal(t, 1, de.Attempts)
				assert.Equal(t, tt.reply.status, de.Status)
				assert.NotEmpty(t, de.Reason)
				assert.Equal(t, tt.wait, de.Wait)
				assert.Equal(t, start.Add(tt.latency).Add(tt.wait), de.RetryAt)
				assert.Equal(t, tt.left, de.Left)
				require.Len(t, rt.bodies, 1)
				assert.Equal(t, 1, rt.bodies[0].closes(), "the discarded response is drained and closed")
			})
		})
	}
}

func TestDeferredErrorThroughHTTPClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c := &http.Client{Transport: heed.New(script(tooMany("Retry-After", "120")))}
		req := newRequest(t, ctx, "POST", "https://api.example/v1/jobs?sig=abc", strings.NewReader("{}"))
		req.Header.Set("Idempotency-Key", "job-42")
		_, err := c.Do(req)
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.True(t, errors.Is(err, heed.ErrDeferred))
		assert.Equal(t, "job-42", de.Key)
		var ue *url.Error
		require.ErrorAs(t, err, &ue)
		assert.NotContains(t, de.Error(), "sig=abc")
		assert.Contains(t, de.Error(), "retry at")
	})
}

func TestDeferredErrorUnwrapsTransportError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		_, err := heed.New(script(reply{err: refuseErr})).RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 0, de.Status)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.ErrorIs(t, err, heed.ErrDeferred)
	})
}

func TestThrottledHoldsTheGate(t *testing.T) {
	tests := []struct {
		name   string
		policy heed.Policy
	}{
		{"when retrying", heed.Policy{}},
		{"when not retrying", heed.Policy{MaxAttempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tooMany("Retry-After", "7"), ok200)
				tr := heed.New(rt, heed.WithPolicy(tt.policy))
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/a", nil))
				require.NoError(t, err)
				resp.Body.Close()
				// Another request to the same host waits out the same instant.
				resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/b", nil))
				require.NoError(t, err)
				resp.Body.Close()
				for _, s := range rt.requests()[1:] {
					assert.GreaterOrEqual(t, s.at.Sub(start), 7*time.Second)
				}
				// Another host is not held.
				before := time.Now()
				resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://other.example/", nil))
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, before, time.Now())
			})
		})
	}
}

func TestGateDefersBeforeSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := heed.NewGate()
		require.NoError(t, gate.Hold(t.Context(), "shared", time.Now().Add(30*time.Second)))
		rt := script(ok200)
		tr := heed.New(rt, heed.WithGate(gate), heed.WithPolicy(heed.Policy{Scope: "shared"}))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		body := newCloseCounter("payload")
		req := newRequest(t, ctx, "PUT", "https://api.example/x", body)
		_, err := tr.RoundTrip(req)
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 0, de.Attempts)
		assert.Equal(t, "cooling down", de.Reason)
		assert.WithinRange(t, de.RetryAt, time.Now().Add(30*time.Second), time.Now().Add(30*time.Second+20*time.Millisecond),
			"the gate's instant, spread by at most 20ms")
		assert.Empty(t, rt.requests())
		assert.Equal(t, 1, body.closes(), "the caller's body is closed once though never sent")

		// With time left, the gate is waited out.
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/x", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.GreaterOrEqual(t, time.Since(start), 30*time.Second, "never before the gate opens")
		assert.LessOrEqual(t, time.Since(start), 30*time.Second+20*time.Millisecond)
	})
}

// failingGate always fails.
type failingGate struct{}

func (failingGate) NotBefore(context.Context, string) (time.Time, error) {
	return time.Time{}, errors.New("gate down")
}
func (failingGate) Hold(context.Context, string, time.Time) error { return errors.New("gate down") }

func TestGateErrorFailsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		rt := script(tooMany("Retry-After", "1"), ok200)
		resp, err := heed.New(rt, heed.WithGate(failingGate{}), heed.WithLogger(log)).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Len(t, rt.requests(), 2)
		warn := logs.FilterField(zapcore.Field{Key: "op", Type: zapcore.StringType, String: "gate error"}).All()
		assert.NotEmpty(t, warn)
		for _, e := range warn {
			assert.Equal(t, zapcore.WarnLevel, e.Level)
		}
	})
}

func TestCallerRequestNeverMutated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(boom500, boom500, ok200)
		req := newRequest(t, t.Context(), "POST", "https://api.example/v1/jobs?x=1", strings.NewReader(`{"a":1}`))
		req.Header.Set("X-Trace", "t1")
		before := req.Header.Clone()
		tr := heed.New(rt, heed.WithPolicy(heed.Policy{KeyHeader: "Idempotency-Key"}))
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, before, req.Header)
		assert.Equal(t, "https://api.example/v1/jobs?x=1", req.URL.String())
		s := rt.requests()
		require.Len(t, s, 3)
		key := s[0].header.Get("Idempotency-Key")
		assert.Len(t, key, 36)
		for i, r := range s {
			assert.Equal(t, `{"a":1}`, string(r.body), "attempt %d body", i+1)
			assert.Equal(t, key, r.header.Get("Idempotency-Key"), "one key per RoundTrip")
			assert.NotSame(t, req, r.req, "attempts send clones")
		}
	})
}

func TestKeyHeader(t *testing.T) {
	tests := []struct {
		method  string
		has     string
		wantNew bool
	}{
		{"POST", "", true}, {"PATCH", "", true}, {"POST", "mine", false}, {"GET", "", false}, {"PUT", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.method+"/"+tt.has, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(boom500, ok200)
				req := newRequest(t, t.Context(), tt.method, "https://api.example/", nil)
				if tt.has != "" {
					req.Header.Set("X-Request-Key", tt.has)
				}
				resp, err := heed.New(rt, heed.WithPolicy(heed.Policy{KeyHeader: "x-request-key"})).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				s := rt.requests()
				require.Len(t, s, 2, "a keyed request is replay-safe")
				k := s[0].header.Get("X-Request-Key")
				switch {
				case tt.wantNew:
					assert.Len(t, k, 36)
					assert.Empty(t, req.Header.Get("X-Request-Key"))
				case tt.has != "":
					assert.Equal(t, tt.has, k)
				default:
					assert.Empty(t, k)
				}
				assert.Equal(t, k, s[1].header.Get("X-Request-Key"))
			})
		})
	}
	// Two RoundTrips get two keys.
	rt := script(ok200)
	tr := heed.New(rt, heed.WithPolicy(heed.Policy{KeyHeader: "Idempotency-Key"}))
	for range 2 {
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
	}
	s := rt.requests()
	assert.NotEqual(t, s[0].header.Get("Idempotency-Key"), s[1].header.Get("Idempotency-Key"))
}

func TestSuccessPathSendsCallerRequest(t *testing.T) {
	rt := script(ok200)
	req := newRequest(t, t.Context(), "GET", "https://api.example/", nil)
	resp, err := heed.New(rt).RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Same(t, req, rt.requests()[0].req, "no copy on the first attempt when nothing changes")
}

func TestCloseIdleConnectionsForwards(t *testing.T) {
	inner := &idleCloser{}
	heed.New(inner).CloseIdleConnections()
	assert.Equal(t, 1, inner.closed)
	heed.New(script(ok200)).CloseIdleConnections() // no such method: no panic
}

type idleCloser struct {
	fakeRT
	closed int
}

func (c *idleCloser) CloseIdleConnections() { c.closed++ }

func TestNilNextIsDefaultTransport(t *testing.T) {
	srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hi") }))
	resp, err := (&http.Client{Transport: heed.New(nil)}).Get(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "hi", readBody(t, resp))
}

// designRecorder wraps a RoundTripper and keeps every response it returns.
type designRecorder struct {
	next  http.RoundTripper
	mu    sync.Mutex
	resps []*http.Response
}

func (r *designRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	r.mu.Lock()
	r.resps = append(r.resps, resp)
	r.mu.Unlock()
	return resp, err
}

func (r *designRecorder) last() *http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resps[len(r.resps)-1]
}

// Nothing of the caller's request changes, whatever its body and however
// many attempts, with a key added by heed.
func TestDesignCallerRequestUnchanged(t *testing.T) {
	big := strings.Repeat("b", heed.DefaultBodyBuffer+1)
	tests := []struct {
		name string
		body func() io.Reader
	}{
		{"no body", func() io.Reader { return nil }},
		{"GetBody", func() io.Reader { return strings.NewReader("payload") }},
		{"buffered", func() io.Reader { return io.MultiReader(strings.NewReader("payload")) }},
		{"ReaderAt", func() io.Reader { return &readerAtBody{Reader: strings.NewReader("payload")} }},
		{"past the bound", func() io.Reader { return io.MultiReader(strings.NewReader(big)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tooMany("Retry-After", "1"), boom500, ok200)
				req := newRequest(t, t.Context(), "POST", "https://u:p@api.example/x?q=1", tt.body())
				req.Header.Set("X-Trace", "t1")
				type snapshot struct {
					method, url, host string
					header            http.Header
					body              io.ReadCloser
					getBody           uintptr
					length            int64
					te                []string
					closeConn         bool
					ctx               context.Context
				}
				snap := func() snapshot {
					var gb uintptr
					if req.GetBody != nil {
						gb = reflect.ValueOf(req.GetBody).Pointer()
					}
					return snapshot{req.Method, req.URL.String(), req.Host, req.Header.Clone(), req.Body, gb, req.ContentLength, req.TransferEncoding, req.Close, req.Context()}
				}
				before := snap()
				resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{KeyHeader: "Idempotency-Key"}))).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, before, snap())
				assert.Empty(t, req.Header.Get("Idempotency-Key"))
			})
		})
	}
}

// Every path that hands back a response hands back the very response next
// returned, unread and unclosed: never an error, never a copy.
func TestDesignResponseReturnedAsIs(t *testing.T) {
	big := strings.Repeat("x", heed.DefaultBodyBuffer+1)
	tests := []struct {
		name    string
		method  string
		policy  heed.Policy
		body    io.Reader
		cancel  bool
		replies []reply
	}{
		{"deliver", "GET", heed.Policy{}, nil, false, []reply{{status: 200, body: "fine"}}},
		{"terminal", "GET", heed.Policy{}, nil, false, []reply{{status: 404, body: "gone"}}},
		{"attempts used up", "GET", heed.Policy{MaxAttempts: 2}, nil, false, []reply{boom500}},
		{"not replay-safe", "POST", heed.Policy{}, nil, false, []reply{boom500}},
		{"body not replayable", "PUT", heed.Policy{}, io.MultiReader(strings.NewReader(big)), false, []reply{tooMany("Retry-After", "1")}},
		{"context done", "GET", heed.Policy{}, nil, true, []reply{boom500}},
		{"retry budget", "GET", heed.Policy{Budget: heed.Budget{Ratio: -1, MinPerSecond: -1}}, nil, false, []reply{boom500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				inner := script(tt.replies...)
				if tt.cancel {
					inner.before = func(*http.Request) { cancel() }
				}
				rec := &designRecorder{next: inner}
				resp, err := heed.New(rec, heed.WithPolicy(exact(tt.policy))).RoundTrip(newRequest(t, ctx, tt.method, "https://api.example/", tt.body))
				require.NoError(t, err)
				require.Same(t, rec.last(), resp)
				bodies := inner.bodies
				assert.Zero(t, bodies[len(bodies)-1].closes(), "delivered unclosed")
				assert.Equal(t, tt.replies[len(tt.replies)-1].body, readBody(t, resp), "delivered unread")
			})
		})
	}
}

func TestDesignWaitIsHintRaisedToMinWaitPlusJitter(t *testing.T) {
	past := "Sun, 06 Nov 1994 08:49:37 GMT"
	tests := []struct {
		name     string
		policy   heed.Policy
		reply    reply
		min, max time.Duration
	}{
		{"200ms becomes MinWait", heed.Policy{}, tooMany("retry-after-ms", "200"), time.Second, time.Second},
		{"a past date becomes MinWait", heed.Policy{}, tooMany("Retry-After", past), time.Second, time.Second},
		{"0 becomes a custom MinWait", heed.Policy{MinWait: 3 * time.Second}, tooMany("Retry-After", "0"), 3 * time.Second, 3 * time.Second},
		{"a hint above MinWait stays", heed.Policy{}, tooMany("x-ms-retry-after-ms", "1500"), 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"jitter after MinWait", heed.Policy{Jitter: 500 * time.Millisecond}, tooMany("Retry-After", "0"), time.Second, 1500 * time.Millisecond},
		{"no jitter on a backoff", heed.Policy{Jitter: 5 * time.Second, Backoff: heed.Constant(2 * time.Second)}, boom500, 2 * time.Second, 2 * time.Second},
		{"no jitter on a backoff for a hintless 503", heed.Policy{Jitter: 5 * time.Second, Backoff: heed.Constant(2 * time.Second)}, reply{status: 503}, 2 * time.Second, 2 * time.Second},
		{"MaxWait is compared before jitter", heed.Policy{Jitter: 10 * time.Second}, tooMany("Retry-After", "60"), 60 * time.Second, 70 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tt.reply, ok200)
				resp, err := heed.New(rt, heed.WithPolicy(exact(tt.policy))).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
				require.NoError(t, err)
				resp.Body.Close()
				g := rt.gaps()
				require.Len(t, g, 1)
				assert.GreaterOrEqual(t, g[0], tt.min)
				assert.LessOrEqual(t, g[0], tt.max)
			})
		})
	}
}

// Jitter is random in [0, Jitter]: not always 0, not always the same.
func TestDesignJitterIsRandom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for range 30 {
			rt := script(tooMany("Retry-After", "2"), ok200)
			resp, err := heed.New(rt, heed.WithPolicy(heed.Policy{Jitter: time.Second})).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			resp.Body.Close()
			g := rt.gaps()
			require.Len(t, g, 1)
			require.GreaterOrEqual(t, g[0], 2*time.Second)
			require.LessOrEqual(t, g[0], 3*time.Second)
			seen[g[0]] = true
		}
		assert.Greater(t, len(seen), 5)
	})
}
