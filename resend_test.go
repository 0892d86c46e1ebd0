package heed_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// TestResendsBeneathHeed pins what net/http's Transport does beneath heed
// when a reused connection breaks before the answer (resend.go): it sends
// a replayable request again by itself, on a new connection, and heed,
// handed only the answer, counts it as one attempt with Resent 1; a POST
// it does not hold replayable it hands back as the broken connection's
// error, and heed, seeing no key, does not resend it either. A real
// loopback server closes the connection on the second request it reads.
func TestResendsBeneathHeed(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		key      string // an Idempotency-Key the request carries
		received int64  // requests the server read, the first call's included
		resent   int
		status   int // the second call's; 0: an error
	}{
		{name: "GET", method: http.MethodGet, received: 3, resent: 1, status: http.StatusOK},
		{name: "DELETE", method: http.MethodDelete, received: 2, resent: 0},
		{name: "POST with Idempotency-Key", method: http.MethodPost, key: "k-1", received: 3, resent: 1, status: http.StatusOK},
		{name: "POST without a key", method: http.MethodPost, received: 2, resent: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var received atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if received.Add(1) == 2 {
					// The connection breaks with the request read and no
					// answer given.
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						_ = conn.Close()
					}
					return
				}
				w.WriteHeader(http.StatusOK)
			}))
			defer srv.Close()
			base := srv.Client().Transport.(*http.Transport).Clone()
			defer base.CloseIdleConnections()
			var rec recorder
			tr := heed.New(base, heed.WithObserver(rec.observe), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
			client := &http.Client{Transport: tr}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			do := func() (*http.Response, error) {
				req := newRequest(t, ctx, tc.method, srv.URL+"/v1/items", strings.NewReader("{}"))
				if tc.key != "" {
					req.Header.Set("Idempotency-Key", tc.key)
				}
				return client.Do(req)
			}
			resp, err := do() // the connection the next call reuses
			require.NoError(t, err)
			readBody(t, resp)
			resp, err = do()
			if tc.status == 0 {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.status, resp.StatusCode)
				readBody(t, resp)
			}
			assert.Equal(t, tc.received, received.Load(), "requests the server read")
			var attempts []heed.Event
			rec.mu.Lock()
			for _, e := range rec.events {
				if e.Kind == heed.EventAttempt {
					attempts = append(attempts, e)
				}
			}
			rec.mu.Unlock()
			require.Len(t, attempts, 2, "one attempt per call, as heed sent each once")
			assert.Zero(t, attempts[0].Resent, "a first connection is not resent")
			assert.Equal(t, tc.resent, attempts[1].Resent, "net/http's own resends of the second call")
		})
	}
}
