package retryable_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/retryable"
)

func TestDecisions(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
	for _, tc := range []struct {
		name    string
		script  []answer
		method  string
		header  map[string]string
		policy  heed.Policy
		sent    int
		status  int    // 0: an error is expected
		body    string // the delivered body, when status is set
		minGaps time.Duration
	}{
		{name: "429 Retry-After 0 waits MinWait", script: []answer{{status: 429, header: map[string]string{"Retry-After": "0"}}, {status: 200, body: "ok"}},
			method: "GET", sent: 2, status: 200, body: "ok", minGaps: 20 * time.Millisecond},
		{name: "retry-after-ms is waited in full", script: []answer{{status: 429, header: map[string]string{"retry-after-ms": "150"}}, {status: 200, body: "ok"}},
			method: "GET", sent: 2, status: 200, body: "ok", minGaps: 150 * time.Millisecond},
		{name: "503 without a hint backs off", script: []answer{{status: 503}, {status: 503}, {status: 200, body: "ok"}},
			method: "POST", sent: 3, status: 200, body: "ok"},
		{name: "402 is terminal and returned", script: []answer{{status: 402, body: "pay"}, {status: 200}},
			method: "GET", sent: 1, status: 402, body: "pay"},
		{name: "insufficient_quota is terminal", script: []answer{{status: 429, header: map[string]string{"Content-Type": "application/json"}, body: quota}, {status: 200}},
			method: "POST", sent: 1, status: 429, body: quota},
		{name: "500 on a POST without key is returned", script: []answer{{status: 500, body: "boom"}, {status: 200}},
			method: "POST", sent: 1, status: 500, body: "boom"},
		{name: "500 on a POST with Idempotency-Key is resent", script: []answer{{status: 500}, {status: 200, body: "ok"}},
			method: "POST", header: map[string]string{"Idempotency-Key": "k1"}, sent: 2, status: 200, body: "ok"},
		{name: "500 on a POST with X-Idempotency-Key is resent", script: []answer{{status: 500}, {status: 200, body: "ok"}},
			method: "POST", header: map[string]string{"X-Idempotency-Key": "k1"}, sent: 2, status: 200, body: "ok"},
		{name: "500 on a POST with the policy's KeyHeader is resent", script: []answer{{status: 500}, {status: 200, body: "ok"}},
			method: "POST", header: map[string]string{"X-Request-Id": "r1"}, policy: heed.Policy{KeyHeader: "X-Request-Id"}, sent: 2, status: 200, body: "ok"},
		{name: "500 on a POST with RetryUnsafe is resent", script: []answer{{status: 500}, {status: 200, body: "ok"}},
			method: "POST", policy: heed.Policy{RetryUnsafe: true}, sent: 2, status: 200, body: "ok"},
		{name: "500 on a PUT is resent", script: []answer{{status: 502}, {status: 200, body: "ok"}},
			method: "PUT", sent: 2, status: 200, body: "ok"},
		{name: "MaxAttempts ends with the last response, body whole", script: []answer{{status: 503, body: "busy"}},
			method: "GET", policy: heed.Policy{MaxAttempts: 3}, sent: 3, status: 503, body: "busy"},
		{name: "MaxAttempts 1 never retries", script: []answer{{status: 429, header: map[string]string{"Retry-After": "0"}}},
			method: "GET", policy: heed.Policy{MaxAttempts: 1}, sent: 1, status: 429},
		{name: "lost POST without key is not resent", script: []answer{{drop: true}, {status: 200}},
			method: "POST", sent: 1},
		{name: "lost POST with Idempotency-Key is resent", script: []answer{{drop: true}, {status: 200, body: "ok"}},
			method: "POST", header: map[string]string{"Idempotency-Key": "k1"}, sent: 2, status: 200, body: "ok"},
		{name: "lost GET is resent", script: []answer{{drop: true}, {status: 200, body: "ok"}},
			method: "GET", sent: 2, status: 200, body: "ok", minGaps: 20 * time.Millisecond},
		{name: "2xx is delivered at once", script: []answer{{status: 201, body: "made"}},
			method: "POST", sent: 1, status: 201, body: "made"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.script...)
			c := newClient(t, quick(tc.policy))
			req, err := retryablehttp.NewRequest(tc.method, s.URL+"/v1/x", []byte("payload"))
			require.NoError(t, err)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if tc.status == 0 {
				require.Error(t, err)
				assert.Nil(t, resp)
				var ue *url.Error
				require.ErrorAs(t, err, &ue)
				assert.NotContains(t, reflect.TypeOf(ue.Err).String(), "retryable.", "the adapter's wrapping leaks: %T", ue.Err)
			} else {
				require.NoError(t, err)
				require.NotNil(t, resp)
				b, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, rerr)
				assert.Equal(t, tc.status, resp.StatusCode)
				assert.Equal(t, tc.body, string(b))
			}
			got := s.requests()
			require.Len(t, got, tc.sent)
			for _, g := range got {
				assert.Equal(t, "payload", string(g.body), "every attempt carries the whole body")
			}
			for _, gap := range s.gaps() {
				assert.GreaterOrEqual(t, gap, tc.minGaps)
			}
		})
	}
}

func TestDeferred(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   []answer
		policy   heed.Policy
		timeout  time.Duration // 0: no deadline
		wait     time.Duration // least Wait expected
		status   int
		transErr bool
	}{
		{name: "hint past the deadline", script: []answer{{status: 429, header: map[string]string{"Retry-After": "120"}}},
			timeout: 2 * time.Second, wait: 120 * time.Second, status: 429},
		{name: "hint past MaxWait, no deadline", script: []answer{{status: 503, header: map[string]string{"Retry-After": "120"}}},
			wait: 120 * time.Second, status: 503},
		{name: "backoff past the deadline", script: []answer{{status: 503}},
			policy: heed.Policy{Backoff: heed.Constant(5 * time.Second)}, timeout: time.Second, wait: 5 * time.Second, status: 503},
		{name: "backoff past the deadline after a lost response", script: []answer{{drop: true}},
			policy: heed.Policy{Backoff: heed.Constant(5 * time.Second)}, timeout: time.Second, wait: 5 * time.Second, transErr: true},
		{name: "MinWait past the deadline", script: []answer{{status: 429, header: map[string]string{"Retry-After": "0"}}},
			policy: heed.Policy{MinWait: 3 * time.Second}, timeout: time.Second, wait: 3 * time.Second, status: 429},
	} {
		for _, via := range []string{"Do", "StandardClient"} {
			t.Run(tc.name+" via "+via, func(t *testing.T) {
				s := newServer(t, tc.script...)
				c := newClient(t, heed.WithPolicy(tc.policy))
				ctx := context.Background()
				if tc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.timeout)
					defer cancel()
				}
				u := strings.Replace(s.URL, "http://", "http://user:secret@", 1) + "/v1/jobs?token=abc"
				start := time.Now()
				var resp *http.Response
				var err error
				if via == "Do" {
					req, rerr := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u, nil)
					require.NoError(t, rerr)
					resp, err = c.Do(req)
				} else {
					req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
					require.NoError(t, rerr)
					resp, err = c.StandardClient().Do(req)
				}
				took := time.Since(start)
				require.Nil(t, resp)
				var d *heed.DeferredError
				require.ErrorAs(t, err, &d)
				assert.ErrorIs(t, err, heed.ErrDeferred)
				assert.Less(t, took, 500*time.Millisecond, "deferred at once")
				assert.Equal(t, 1, d.Attempts)
				assert.Equal(t, tc.status, d.Status)
				assert.Equal(t, http.MethodGet, d.Method)
				assert.Equal(t, "default", d.Route)
				assert.NotContains(t, d.URL, "secret")
				assert.NotContains(t, d.URL, "token")
				assert.GreaterOrEqual(t, d.Wait, tc.wait)
				assert.WithinDuration(t, start.Add(d.Wait), d.RetryAt, 500*time.Millisecond)
				if tc.timeout > 0 {
					assert.Positive(t, d.Left)
					assert.LessOrEqual(t, d.Left, tc.timeout)
				} else {
					assert.Zero(t, d.Left)
				}
				if tc.transErr {
					assert.Error(t, d.Err)
					assert.NotContains(t, reflect.TypeOf(d.Err).String(), "retryable.")
				} else {
					assert.NoError(t, d.Err)
				}
				assert.Len(t, s.requests(), 1)
			})
		}
	}
}

func TestMaxElapsedBoundsTheCall(t *testing.T) {
	s := newServer(t, answer{status: 503})
	c := newClient(t, heed.WithPolicy(heed.Policy{MaxAttempts: 10, MaxElapsed: 250 * time.Millisecond, Backoff: heed.Constant(80 * time.Millisecond)}))
	start := time.Now()
	resp, err := c.Get(s.URL)
	took := time.Since(start)
	require.Nil(t, resp)
	var d *heed.DeferredError
	require.ErrorAs(t, err, &d)
	n := len(s.requests())
	assert.GreaterOrEqual(t, n, 2)
	assert.LessOrEqual(t, n, 4)
	assert.Equal(t, n, d.Attempts)
	assert.Less(t, took, 400*time.Millisecond, "never far past MaxElapsed")
}

func TestRoutesDecideAttempts(t *testing.T) {
	s := newServer(t, answer{status: 503})
	c := newClient(t,
		quick(heed.Policy{MaxAttempts: 4}),
		heed.WithRoute("POST /jobs", heed.Policy{MaxAttempts: 2, Backoff: heed.Constant(time.Millisecond)}),
	)
	resp, err := c.Post(s.URL+"/jobs", "text/plain", []byte("x"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Len(t, s.requests(), 2)

	resp, err = c.Get(s.URL + "/other")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Len(t, s.requests(), 2+4)
}

func TestKeepsTheCallersPrepareRetry(t *testing.T) {
	s := newServer(t, answer{status: 503}, answer{status: 503}, answer{status: 200})
	c := retryablehttp.NewClient()
	c.Logger = nil
	var calls atomic.Int32
	c.PrepareRetry = func(r *http.Request) error {
		calls.Add(1)
		r.Header.Set("X-Signed", "yes")
		return nil
	}
	retryable.Configure(c, quick(heed.Policy{}))
	retryable.Configure(c, quick(heed.Policy{})) // twice: still one wrapper, one call each retry
	defer c.HTTPClient.CloseIdleConnections()

	resp, err := c.Get(s.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, int32(2), calls.Load())
	got := s.requests()
	require.Len(t, got, 3)
	assert.Empty(t, got[0].header.Get("X-Signed"))
	assert.Equal(t, "yes", got[2].header.Get("X-Signed"))
}

func TestCallersRequestIsLeftAlone(t *testing.T) {
	s := newServer(t, answer{status: 429, header: map[string]string{"Retry-After": "0"}}, answer{status: 429, header: map[string]string{"Retry-After": "0"}}, answer{status: 200})
	c := newClient(t, quick(heed.Policy{}))
	ctx := context.WithValue(context.Background(), callerKey{}, "mine")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	require.NoError(t, err)
	req.Header.Set("X-Mine", "1")
	resp, err := c.StandardClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, ctx, req.Context())
	assert.Equal(t, http.Header{"X-Mine": {"1"}}, req.Header)
	assert.Len(t, s.requests(), 3)
}

func TestCancelDuringWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []answer
	}{
		{"after a response", []answer{{status: 429, header: map[string]string{"Retry-After": "5"}}}},
		{"after a lost response", []answer{{drop: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.script...)
			c := newClient(t, heed.WithPolicy(heed.Policy{Backoff: heed.Constant(5 * time.Second)}))
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := c.Do(req)
			assert.Nil(t, resp)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(start), time.Second)
			assert.Len(t, s.requests(), 1)
		})
	}
}

func TestRedirectThenThrottle(t *testing.T) {
	s := newServer(t, answer{status: 200, body: "there"})
	var news atomic.Int32
	s.handler = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
			return true
		}
		if news.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	}
	c := newClient(t, quick(heed.Policy{}))
	resp, err := c.Get(s.URL + "/old")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "there", string(b))
	assert.Len(t, s.requests(), 4) // old, new (429), old, new (200)
}

func TestConcurrentCallsSharingAContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, quick(heed.Policy{MaxAttempts: 3, MaxElapsed: 5 * time.Second}))
	var wg sync.WaitGroup
	servers := make([]*server, 8)
	for i := range servers {
		servers[i] = newServer(t, answer{status: 503}, answer{status: 503}, answer{status: 200})
	}
	errs := make([]error, len(servers))
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
			if err != nil {
				errs[i] = err
				return
			}
			resp, err := c.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs[i] = errors.New(resp.Status)
			}
		}()
	}
	wg.Wait()
	for i, s := range servers {
		assert.NoError(t, errs[i])
		assert.Len(t, s.requests(), 3)
	}
}

// callerKey is a context key of the caller's own.
type callerKey struct{}

// TestFallbackBackoffKeepsABodysWait: a 429 whose only wait is in its body
// (Gemini's RetryInfo), answered to a client whose HTTPClient was replaced
// after Configure, so that the recorder never sees it: Backoff, which runs
// after retryablehttp drained the body, still waits what CheckRetry read.
func TestFallbackBackoffKeepsABodysWait(t *testing.T) {
	for _, delay := range []string{"1.5s", "0.8s"} {
		t.Run(delay, func(t *testing.T) {
			body := `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + delay + `"}]}}`
			s := newServer(t,
				answer{status: 429, header: map[string]string{"Content-Type": "application/json"}, body: body},
				answer{status: 200, body: "ok"})
			c := newClient(t, quick(heed.Policy{MinWait: 10 * time.Millisecond}))
			c.HTTPClient = cleanhttp.DefaultPooledClient() // replaced after Configure
			resp, err := c.Get(s.URL)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			want, err := time.ParseDuration(delay)
			require.NoError(t, err)
			g := s.gaps()
			require.Len(t, g, 1)
			assert.GreaterOrEqual(t, g[0], want, "retried %v after a 429 asking for %s", g[0], delay)
		})
	}
}
