package heed_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
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
// a far server is.
func TestNoSendWrittenInsideAHoldLearnedWhileDialing(t *testing.T) {
	tests := []struct {
		name     string
		hint     int           // seconds, of the throttle learned while dialing
		dial     time.Duration // how long the slow dial takes
		deadline time.Duration // the dialing request's time; 0: none
	}{
		{"hint 1s, dial 250ms", 1, 250 * time.Millisecond, 0},
		{"hint 2s, dial 400ms", 2, 400 * time.Millisecond, 0},
		{"hint 2s, no time to wait: deferred unsent", 2, 250 * time.Millisecond, time.Second},
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

			// A throttle first: the scope is one a herd is being throttled on.
			resp, err := get(t.Context(), "/warm")
			require.NoError(t, err)
			resp.Body.Close()
			time.Sleep(1100 * time.Millisecond)

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
			resp, err = get(ctx, "/b") // passes the gate, then dials slowly
			wg.Wait()

			mu.Lock()
			defer mu.Unlock()
			holdEnd := throttledAt.Add(time.Duration(tt.hint) * time.Second)
			if tt.deadline > 0 {
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, 0, de.Attempts, "nothing was written")
				assert.False(t, de.RetryAt.Before(holdEnd), "RetryAt %v is not before the hold's end %v", de.RetryAt, holdEnd)
				assert.Less(t, time.Since(start), tt.deadline, "deferred at once, not at the deadline")
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
