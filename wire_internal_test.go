package heed

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

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
