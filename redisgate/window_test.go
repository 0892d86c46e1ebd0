package redisgate

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// window is a rate-limited API: a fixed window of limit requests a second,
// which answers 429 with Retry-After in whole seconds to the window's end,
// at once, and serves a request in latency. With publish, every answer
// carries the quota left and its reset.
type window struct {
	limit   int
	publish bool
	latency time.Duration

	mu      sync.Mutex
	id      int64 // the current window: Unix seconds
	count   int
	served  atomic.Int64
	refused atomic.Int64
}

func newWindow(limit int, publish bool) *window {
	return &window{limit: limit, publish: publish}
}

func (s *window) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	s.mu.Lock()
	id := now.Unix()
	if id != s.id {
		s.id, s.count = id, 0
	}
	ok := s.count < s.limit
	if ok {
		s.count++
	}
	left := s.limit - s.count
	s.mu.Unlock()
	toEnd := strconv.Itoa(int(math.Ceil(time.Unix(id+1, 0).Sub(now).Seconds())))
	if s.publish {
		w.Header().Set("X-RateLimit-Limit", strconv.Itoa(s.limit))
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(left))
		w.Header().Set("X-RateLimit-Reset", toEnd)
	}
	if !ok {
		s.refused.Add(1)
		w.Header().Set("Retry-After", toEnd)
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.served.Add(1)
	if s.latency > 0 {
		t := time.NewTimer(s.latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
	}
}
