package heed_test

// Tests that pin the design claims listed below: the public API to the
// letter, and the behaviour of the gate, the budget, hints, published
// quotas, default classes, bodies and logs, where the other test files
// leave a claim open or test it only weakly.

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// ---------------------------------------------------------------------------
// Public API of package heed, to the letter.

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

// ---------------------------------------------------------------------------
// Step 2: send; clone from the second attempt; never mutate; close once.

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

// ---------------------------------------------------------------------------
// Step 3: the gate is held by a Throttled response with a valid hint, for
// exactly the hint; return as is.

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

// ---------------------------------------------------------------------------
// Steps 5 and 6: the wait, jitter, MaxWait and the budget.

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
