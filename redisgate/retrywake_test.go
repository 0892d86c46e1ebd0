package redisgate

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// TestRetryWakesPastItsOwnHold asserts that a throttled request retried
// through a redisgate waits once: the gate keeps its hold in whole
// milliseconds, rounded up, and the retry wakes on that millisecond rather
// than inside it, so it does not wait at the gate again for the rest.
func TestRetryWakesPastItsOwnHold(t *testing.T) {
	s := startRedis(t)
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1)%2 == 1 {
			w.Header().Set("Retry-After-Ms", "20")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	t.Cleanup(srv.Close)

	var mu sync.Mutex
	kinds := map[heed.EventKind]int{}
	tr := heed.New(nil,
		heed.WithGate(New(s.client(t), WithPrefix(t.Name()))),
		heed.WithPolicy(heed.Policy{MinWait: 10 * time.Millisecond}),
		heed.WithObserver(func(e heed.Event) {
			mu.Lock()
			kinds[e.Kind]++
			mu.Unlock()
		}))
	t.Cleanup(tr.CloseIdleConnections)

	const n = 20
	for range n {
		code, err := get(t, tr, srv.URL, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, n, kinds[heed.EventRetry], "one retry per request")
	assert.Zero(t, kinds[heed.EventGateWait], "no retry waits at the gate for its own hold")
}
