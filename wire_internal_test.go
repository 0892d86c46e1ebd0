package heed

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMayCarryHTTP2: a deferred send's connection is made unwritable only
// when it carries HTTP/1 alone; one that may carry HTTP/2 is shared.
func TestMayCarryHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	dialTLS := func(protos ...string) net.Conn {
		c, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{RootCAs: roots, NextProtos: protos, ServerName: "example.com"})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	plain, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer plain.Close()
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	h1 := &http.Transport{Protocols: new(http.Protocols)}
	h1.Protocols.SetHTTP1(true)
	wrapper := roundTripperFunc(http.DefaultTransport.RoundTrip)

	tests := []struct {
		name string
		conn net.Conn
		next http.RoundTripper
		want bool
	}{
		{"TLS that negotiated h2", dialTLS("h2", "http/1.1"), http.DefaultTransport, true},
		{"TLS that negotiated HTTP/1.1", dialTLS("http/1.1"), http.DefaultTransport, false},
		{"TLS with no protocol negotiated", dialTLS(), wrapper, false},
		{"plain, net/http's default Transport", plain, http.DefaultTransport, false},
		{"plain, a Transport of HTTP/1 alone", plain, h1, false},
		{"plain, a Transport that speaks h2c", plain, h2c, true},
		{"plain, a wrapper of net/http's", plain, wrapper, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, mayCarryHTTP2(tt.conn, tt.next))
		})
	}
}

// roundTripperFunc is a RoundTripper of a function.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHoldsKeepTheMonotonicClock: a hold learned in process, whether this
// Transport's or found in its gate, keeps its monotonic reading, so the
// wire check waits it out on the monotonic clock: a wall clock slewed or
// stepped meanwhile (NTP) does not end it early. Kept as Unix nanoseconds,
// as it once was, a 1 s hold ended 250 µs early under a 250 ppm slew.
func TestHoldsKeepTheMonotonicClock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
	}{
		{"Retry-After 1", http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}},
		{"Retry-After 30", http.StatusServiceUnavailable, http.Header{"Retry-After": {"30"}}},
		{"a millisecond hint", http.StatusTooManyRequests, http.Header{"Retry-After-Ms": {"1500"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: tc.status, Header: tc.header, Body: http.NoBody, Request: r}, nil
			})
			tr := New(rt, WithPolicy(Policy{MaxAttempts: 1}))
			req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			sl := tr.scopes["127.0.0.1:1"]
			require.NotNil(t, sl)
			held := sl.heldUntil.load()
			require.True(t, held.After(time.Now()))
			assert.Contains(t, held.String(), "m=+", "the Transport's hold has its monotonic reading")
			c := call{transport: tr, ctx: t.Context(), scope: "127.0.0.1:1", local: sl}
			assert.Contains(t, c.holdEnd(false).String(), "m=+", "the wire check's hold has its monotonic reading")
		})
	}
	var i instant
	now := time.Now()
	assert.True(t, i.raise(now, 0))
	assert.False(t, i.raise(now, 0), "not later")
	assert.False(t, i.raise(now.Add(time.Millisecond), time.Millisecond), "within the slack")
	assert.True(t, i.raise(now.Add(2*time.Millisecond), time.Millisecond))
	assert.Equal(t, now.Add(2*time.Millisecond), i.load())
}
