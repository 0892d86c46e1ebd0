package heed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heed-go/heed"
)

// Secrets a request may carry. None may reach a log line at any level, an
// error string heed makes, a DeferredError field or an observer Event.
const (
	secretBearer   = "sk-live-BEARER0001"
	secretCookie   = "COOKIE0002"
	secretAPIKey   = "APIKEY0003"
	secretPassword = "PASSWORD0004"
	secretAmzSig   = "AMZSIG0005"
	secretSig      = "SIGVALUE0006"
	secretQueryKey = "QUERYKEY0007"
	secretFragment = "FRAGMENT0008"
	secretBody     = "BODY0009"
	secretProxy    = "PROXY0010"
)

var allSecrets = []string{secretBearer, secretCookie, secretAPIKey, secretPassword, secretAmzSig, secretSig, secretQueryKey, secretFragment, secretBody, secretProxy}

// secretPath is the URL path and query of a request full of secrets; a
// test puts a scheme, userinfo and host before it.
const secretPath = "/v1/x?X-Amz-Signature=" + secretAmzSig + "&sig=" + secretSig + "&api_key=" + secretQueryKey + "&page=2#" + secretFragment

// secretRequest builds a request to base (scheme://host) carrying every
// secret: in headers, userinfo, query, fragment and body.
func secretRequest(t *testing.T, ctx context.Context, method, base string) *http.Request {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.User = url.UserPassword("alice", secretPassword)
	var body *strings.Reader
	if method != http.MethodGet {
		body = strings.NewReader(secretBody)
	}
	var req *http.Request
	if body != nil {
		req = newRequest(t, ctx, method, u.String()+secretPath, body)
	} else {
		req = newRequest(t, ctx, method, u.String()+secretPath, nil)
	}
	req.Header.Set("Authorization", "Bearer "+secretBearer)
	req.Header.Set("Proxy-Authorization", "Basic "+secretProxy)
	req.Header.Set("Cookie", "session="+secretCookie)
	req.Header.Set("X-Api-Key", secretAPIKey)
	return req
}

// secretWitness gathers every text heed produced in one RoundTrip: its zap
// lines, its slog lines (as JSON) and its events.
type secretWitness struct {
	logs   *observer.ObservedLogs
	slog   *lockedBuffer
	mu     sync.Mutex
	events []heed.Event
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newSecretTransport(next http.RoundTripper, p heed.Policy) (*heed.Transport, *secretWitness) {
	log, logs := observed()
	w := &secretWitness{logs: logs, slog: &lockedBuffer{}}
	sl := slog.New(slog.NewJSONHandler(w.slog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr := heed.New(next, heed.WithLogger(log), heed.WithSlog(sl), heed.WithPolicy(p), heed.WithObserver(func(e heed.Event) {
		w.mu.Lock()
		w.events = append(w.events, e)
		w.mu.Unlock()
	}))
	return tr, w
}

// check asserts no secret in the log lines, events, the error heed
// returned and, for a *DeferredError, every field of it. It returns how
// many texts it looked at.
func (w *secretWitness) check(t *testing.T, err error) int {
	t.Helper()
	var texts []string
	for _, e := range w.logs.All() {
		texts = append(texts, e.Message, e.LoggerName, e.Stack)
		for k, v := range e.ContextMap() {
			texts = append(texts, k+"="+fmt.Sprint(v))
		}
	}
	texts = append(texts, w.slog.String())
	w.sameLines(t)
	w.mu.Lock()
	for _, e := range w.events {
		texts = append(texts, e.Route, e.Method, e.URL, e.Reason, e.Source, e.Stop)
		if e.Err != nil {
			texts = append(texts, e.Err.Error())
		}
	}
	w.mu.Unlock()
	if err != nil {
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
	}
	var de *heed.DeferredError
	if errors.As(err, &de) {
		texts = append(texts, de.Method, de.URL, de.Route, de.Key, de.Reason, de.Error())
		if de.Err != nil {
			texts = append(texts, de.Err.Error())
		}
		assert.NotContains(t, de.URL, "?")
		assert.NotContains(t, de.URL, "@")
		assert.NotContains(t, de.URL, "#")
	}
	for _, s := range texts {
		for _, secret := range allSecrets {
			if strings.Contains(s, secret) {
				t.Errorf("secret %q in %q", secret, s)
			}
		}
	}
	return len(texts)
}

// sameLines asserts that the slog logger got the zap logger's lines: the
// same messages, levels and keys, in the same order.
func (w *secretWitness) sameLines(t *testing.T) {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(w.slog.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	zl := w.logs.All()
	require.Len(t, lines, len(zl), "one slog line per zap line")
	for i, e := range zl {
		m := lines[i]
		assert.Equal(t, e.Message, m[slog.MessageKey], "line %d", i)
		assert.Equal(t, strings.ToUpper(e.Level.String()), m[slog.LevelKey], "line %d", i)
		var zk, sk []string
		for k := range e.ContextMap() {
			zk = append(zk, k)
		}
		for k := range m {
			if k != slog.MessageKey && k != slog.LevelKey && k != slog.TimeKey {
				sk = append(sk, k)
			}
		}
		assert.ElementsMatch(t, zk, sk, "line %d: the same keys", i)
		assert.Equal(t, e.ContextMap()["op"], m["op"], "line %d", i)
		assert.Equal(t, e.ContextMap()["url"], m["url"], "line %d", i)
		assert.Equal(t, e.ContextMap()["error"], m["error"], "line %d", i)
	}
}

// TestLogsAndErrorsHoldNoSecrets runs one request full of secrets down
// every path heed has, at debug level with an observer, and looks for the
// secrets in everything heed says. The paths use the scripted in-memory
// transport on a fake clock; the transport errors are real ones too.
func TestLogsAndErrorsHoldNoSecrets(t *testing.T) {
	quick := heed.Policy{MinWait: time.Second, Backoff: heed.Constant(time.Second)}
	tests := []struct {
		name    string
		method  string
		policy  heed.Policy
		replies []reply
		timeout time.Duration
		want    string // "response", "deferred" or "error"
	}{
		{"success", "GET", quick, []reply{ok200}, 0, "response"},
		{"terminal", "GET", quick, []reply{{status: 401, body: "no"}}, 0, "response"},
		{"retry then success", "PUT", quick, []reply{tooMany("Retry-After", "1"), boom500, {err: resetErr}, ok200}, 0, "response"},
		{"give up: attempts used up", "GET", heed.Policy{MaxAttempts: 2, MinWait: time.Second, Backoff: heed.Constant(time.Second)}, []reply{tooMany("Retry-After", "1")}, 0, "response"},
		{"give up: not replay-safe", "POST", quick, []reply{boom500}, 0, "response"},
		{"give up: transport error", "POST", quick, []reply{{err: fmt.Errorf("proxy: %w", resetErr)}}, 0, "error"},
		{"attempts used up on transport errors", "GET", heed.Policy{MaxAttempts: 3, Backoff: heed.Constant(time.Second)}, []reply{{err: resetErr}}, 0, "error"},
		{"defer: hint too long", "GET", quick, []reply{tooMany("Retry-After", "600")}, 3 * time.Second, "deferred"},
		{"defer: hint over MaxWait", "GET", heed.Policy{MaxWait: time.Second}, []reply{tooMany("retry-after-ms", "5000")}, 0, "deferred"},
		{"defer after a transport error", "GET", heed.Policy{Backoff: heed.Constant(time.Minute), MaxWait: time.Second}, []reply{{err: resetErr}}, 0, "deferred"},
		{"retry budget", "GET", heed.Policy{Backoff: heed.Constant(time.Second), Budget: heed.Budget{Ratio: -1, MinPerSecond: -1}}, []reply{boom500}, 0, "response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				tr, w := newSecretTransport(script(tt.replies...), tt.policy)
				resp, err := tr.RoundTrip(secretRequest(t, ctx, tt.method, "https://api.example"))
				if resp != nil {
					resp.Body.Close()
				}
				var de *heed.DeferredError
				switch tt.want {
				case "response":
					require.NoError(t, err)
				case "deferred":
					require.ErrorAs(t, err, &de)
					assert.Equal(t, "https://api.example/v1/x", de.URL)
				case "error":
					require.Error(t, err)
					require.NotErrorAs(t, err, &de)
				}
				assert.Greater(t, w.check(t, err), 5)
				assert.NotEmpty(t, w.logs.All(), "something was logged")
			})
		})
	}

	t.Run("defer at the gate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, w := newSecretTransport(script(tooMany("Retry-After", "600")), quick)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			_, err := tr.RoundTrip(secretRequest(t, ctx, "GET", "https://api.example"))
			require.ErrorIs(t, err, heed.ErrDeferred)
			_, err = tr.RoundTrip(secretRequest(t, ctx, "POST", "https://api.example"))
			var de *heed.DeferredError
			require.ErrorAs(t, err, &de)
			assert.Zero(t, de.Attempts)
			assert.Equal(t, "cooling down", de.Reason)
			w.check(t, err)
		})
	})
}

// TestSecretsWithRealTransportErrors sends the same request through a real
// http.Transport to loopback servers that refuse, reset, and drop the
// connection, and checks what heed's RoundTrip returns and logs. It is the
// Transport's own errors that are checked: http.Client wraps every error
// in a *url.Error quoting the request URL with its query (only the
// password is stripped), which is the standard library's doing, not heed's.
// Callers that log client errors should redact them themselves.
func TestSecretsWithRealTransportErrors(t *testing.T) {
	fast := heed.Policy{MaxAttempts: 3, MinWait: time.Millisecond, Backoff: heed.Constant(time.Millisecond)}

	// A port with nothing listening: dial refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	drop := func(rst bool) string {
		srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			if tc, ok := conn.(*net.TCPConn); ok && rst {
				_ = tc.SetLinger(0)
			}
			conn.Close()
		}))
		return srv.URL
	}
	throttle := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "600")
		w.WriteHeader(http.StatusTooManyRequests)
	})).URL

	for _, tc := range []struct {
		name, base, method string
	}{
		{"dial refused", refused, "GET"},
		{"connection reset", drop(true), "GET"},
		{"connection reset, POST", drop(true), "POST"},
		{"connection closed", drop(false), "PUT"},
		{"deferred", throttle, "GET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &http.Transport{}
			defer inner.CloseIdleConnections()
			tr, w := newSecretTransport(inner, fast)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			resp, err := tr.RoundTrip(secretRequest(t, ctx, tc.method, tc.base))
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			w.check(t, err)

			// The same through an http.Client: its *url.Error quotes the
			// URL with the query. Shown, not asserted: it is net/http's.
			_, cerr := (&http.Client{Transport: tr}).Do(secretRequest(t, ctx, tc.method, tc.base))
			require.Error(t, cerr)
			t.Logf("http.Client error (net/http adds the URL): %v", cerr)
		})
	}
}

// TestSecretsInnerErrorQuotingTheURL: an inner RoundTripper whose error
// quotes the request URL (a *url.Error, as one built on an http.Client
// returns, bare or wrapped) must not carry the query into heed's logs or
// into the text of a DeferredError.
func TestSecretsInnerErrorQuotingTheURL(t *testing.T) {
	full := "https://alice:" + secretPassword + "@api.example" + secretPath
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"url.Error", &url.Error{Op: "Get", URL: full, Err: resetErr}},
		{"wrapped url.Error", fmt.Errorf("sdk transport: %w", &url.Error{Op: "Get", URL: full, Err: resetErr})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, w := newSecretTransport(script(reply{err: tc.err}), heed.Policy{MaxWait: time.Second, Backoff: heed.Constant(time.Minute)})
				_, err := tr.RoundTrip(secretRequest(t, t.Context(), "GET", "https://api.example"))
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				// The caller's own error value is kept in Err for errors.Is
				// and errors.As; what heed writes and says must be clean.
				var texts []string
				for _, e := range w.logs.All() {
					for k, v := range e.ContextMap() {
						texts = append(texts, k+"="+fmt.Sprint(v))
					}
				}
				texts = append(texts, de.Error(), de.URL)
				for _, s := range texts {
					for _, secret := range allSecrets {
						assert.NotContains(t, s, secret)
					}
				}
			})
		})
	}
}

// TestSecretsOpaqueURL: a request whose URL is opaque (the request-URI
// set by hand) is redacted too.
func TestSecretsOpaqueURL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, w := newSecretTransport(script(tooMany("Retry-After", "600")), heed.Policy{MaxWait: time.Second})
		req := secretRequest(t, t.Context(), "GET", "https://api.example")
		req.URL.Opaque = "//alice:" + secretPassword + "@api.example/v1/x"
		_, err := tr.RoundTrip(req)
		require.ErrorIs(t, err, heed.ErrDeferred)
		w.check(t, err)
	})
}
