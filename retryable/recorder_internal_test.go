package retryable

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// TestRecorderForgetsEveryResponse checks that no attempt stays recorded
// once calls return, whichever way they end, with and without
// http.Client.Timeout wrapping the bodies.
func TestRecorderForgetsEveryResponse(t *testing.T) {
	var n atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/throttle", http.StatusFound)
		case "/throttle":
			if n.Add(1)%2 == 1 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			_, _ = io.WriteString(w, "ok")
		case "/terminal":
			w.WriteHeader(http.StatusForbidden)
		case "/defer":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = l
	s.Start()
	defer s.Close()

	for _, timeout := range []time.Duration{0, 5 * time.Second} {
		c := retryablehttp.NewClient()
		c.Logger = nil
		c.HTTPClient.Timeout = timeout
		Configure(c, heed.WithPolicy(heed.Policy{MaxAttempts: 3, MinWait: time.Millisecond, Backoff: heed.Constant(time.Millisecond)}))
		rec := c.HTTPClient.Transport.(*recorder)
		for _, path := range []string{"/redirect", "/throttle", "/terminal", "/defer", "/exhaust"} {
			resp, err := c.Get(s.URL + path)
			if err == nil {
				if timeout == 0 {
					_, ours := resp.Body.(*trackedBody)
					assert.False(t, ours, "%s: the transport's body is restored", path)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			left := 0
			rec.live.Range(func(any, any) bool { left++; return true })
			assert.Zero(t, left, "timeout %v, %s: attempts left recorded", timeout, path)
		}
		c.HTTPClient.CloseIdleConnections()
	}
}
