package heed_test

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// fixedWindow is an in-memory API with a fixed window of limit requests a
// second on whole seconds, which answers 429 at once with Retry-After in
// whole seconds to the window's end, and serves in 2ms. It counts its 429s
// per window, and every request sent before a time it named in a 429
// already answered.
type fixedWindow struct {
	limit int

	mu      sync.Mutex
	id      int64
	count   int
	refused map[int64]int // window: 429s
	served  int
	named   time.Time // the latest time a 429 named
	early   int       // requests sent after a 429 named a later time
	lastAns time.Time // when that 429 was answered
}

func (s *fixedWindow) RoundTrip(r *http.Request) (*http.Response, error) {
	now := time.Now()
	s.mu.Lock()
	if now.After(s.lastAns) && now.Before(s.named) {
		s.early++
	}
	id := now.Unix()
	if id != s.id {
		s.id, s.count = id, 0
	}
	ok := s.count < s.limit
	if ok {
		s.count++
		s.served++
	} else {
		s.refused[id]++
		wait := math.Ceil(time.Unix(id+1, 0).Sub(now).Seconds())
		if at := now.Add(time.Duration(wait) * time.Second); at.After(s.named) {
			s.named, s.lastAns = at, now
		}
	}
	s.mu.Unlock()
	h := http.Header{}
	status := http.StatusOK
	if !ok {
		status = http.StatusTooManyRequests
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(time.Unix(id+1, 0).Sub(now).Seconds()))))
	} else {
		time.Sleep(2 * time.Millisecond)
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
}

// herd sends n GETs from 16 goroutines through one Transport with gate,
// and returns the server.
func herd(t *testing.T, gate heed.Gate, n int) *fixedWindow {
	api := &fixedWindow{limit: 40, refused: make(map[int64]int)}
	tr := heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxAttempts: 50}))
	time.Sleep(300 * time.Millisecond) // start into a window
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range jobs {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.example/", nil)
				resp, err := tr.RoundTrip(req)
				if assert.NoError(t, err) {
					assert.Equal(t, http.StatusOK, resp.StatusCode)
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	assert.Equal(t, n, api.served)
	return api
}

// TestInferredQuotaHerd: a herd on a fixed window that publishes no quota
// is throttled in its first two windows; then its gate has learned the
// window and sends no more than it serves, but for a probe every
// rules.InferProbe windows, and never before a time the server named.
func TestInferredQuotaHerd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := herd(t, heed.NewGate(heed.WithInferredQuota(true)), 40*20)
		var first, later, windows int
		for id, n := range api.refused {
			if id-api.id <= -18 { // the first two windows of twenty
				first += n
			} else {
				later += n
			}
			windows++
		}
		t.Logf("429s: %d in the first two windows, %d after; by window: %v", first, later, api.refused)
		assert.Positive(t, first)
		assert.LessOrEqual(t, later, 20/rules.InferProbe+1, "a 429 for a probe at most, after two windows")
		assert.Zero(t, api.early, "never sent before a time the server named")
	})
	synctest.Test(t, func(t *testing.T) {
		// Off by default: the Transport's paced release (release.go) spares
		// the windows after the first few all the same, in process.
		api := herd(t, heed.NewGate(), 40*20)
		total := 0
		for _, n := range api.refused {
			total += n
		}
		t.Logf("429s without it: %d; by window: %v", total, api.refused)
		assert.LessOrEqual(t, len(api.refused), 20/rules.InferProbe+3, "not throttled window after window")
		assert.Zero(t, api.early)
	})
}

func TestInferredQuotaHerdEarlyCheck(t *testing.T) {
	// The server's check of early sends sees one: a Transport without a
	// gate that holds (every request on its own) sends early.
	synctest.Test(t, func(t *testing.T) {
		api := &fixedWindow{limit: 1, refused: make(map[int64]int)}
		_, err := api.RoundTrip(&http.Request{})
		require.NoError(t, err)
		_, err = api.RoundTrip(&http.Request{})
		require.NoError(t, err)
		time.Sleep(time.Millisecond)
		_, err = api.RoundTrip(&http.Request{})
		require.NoError(t, err)
		assert.Equal(t, 1, api.early)
	})
}
