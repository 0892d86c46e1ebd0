package heed_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/heed-go/heed"
)

// slidingServer is a sliding window counter as go-chi/httprate keeps one:
// limit requests a window, a request admitted while the previous window's
// count, weighted by the share of it the sliding window still covers, plus
// the current window's, rounded, leaves room for it. Its windows start at
// the instant it was made (born), not on whole seconds. Every answer
// publishes X-RateLimit-Limit, -Remaining, and -Reset: the current
// window's end in whole Unix seconds, rounded down, so a reset that may
// come before the window's end; a refusal says Retry-After: the window's
// length in seconds. It answers after latency, and counts the sends that
// arrived after a refusal had reached the client, before the time it gave.
type slidingServer struct {
	limit   int
	window  time.Duration
	born    time.Time
	latency time.Duration

	mu         sync.Mutex
	start      time.Time // the current window's
	prev, curr int
	refusals   []refusal
	early      int
	served     int
	refused    int
}

func (s *slidingServer) RoundTrip(r *http.Request) (*http.Response, error) {
	now := time.Now()
	s.mu.Lock()
	for _, f := range s.refusals {
		if now.After(f.delivered) && now.Before(f.until) {
			s.early++
			break
		}
	}
	start := s.born.Add(now.Sub(s.born).Truncate(s.window))
	switch {
	case s.start.IsZero() || start.Sub(s.start) > s.window:
		s.prev, s.curr = 0, 0
	case start.After(s.start):
		s.prev, s.curr = s.curr, 0
	}
	s.start = start
	into := now.Sub(start).Seconds() / s.window.Seconds()
	rate := int(math.Round(float64(s.prev)*(1-into) + float64(s.curr)))
	ok := rate+1 <= s.limit
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.limit))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(start.Add(s.window).Unix(), 10))
	if ok {
		s.curr++
		s.served++
		h.Set("X-RateLimit-Remaining", strconv.Itoa(s.limit-rate-1))
	} else {
		s.refused++
		h.Set("X-RateLimit-Remaining", strconv.Itoa(max(s.limit-rate, 0)))
		h.Set("Retry-After", strconv.Itoa(int(s.window.Seconds())))
	}
	s.mu.Unlock()
	time.Sleep(s.latency)
	resp := &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(strings.NewReader("ok")), Request: r}
	if !ok {
		resp.StatusCode = http.StatusTooManyRequests
		now := time.Now()
		wait, _, _ := heed.Hint(resp, now)
		s.mu.Lock()
		s.refusals = append(s.refusals, refusal{now, now.Add(wait)})
		s.mu.Unlock()
	}
	return resp, nil
}

// slidingIdeal is the time from the first send to the last for total
// sends to a slidingServer, the first lead after it was made, by a client
// that sends each at the first instant the server admits it: limit at
// once; then, in each window after, limit more, the c-th of them (from 0)
// once (c + ½)/limit of the window has passed.
func slidingIdeal(limit, total int, window, lead time.Duration) time.Duration {
	if total <= limit {
		return 0
	}
	j := total - limit - 1
	first := lead.Truncate(window)
	at := first + window*time.Duration(1+j/limit) + time.Duration((float64(j%limit)+0.5)/float64(limit)*float64(window))
	return at - lead
}

// TestPacingToASlidingWindowsRoom: against a sliding window that publishes
// the room its weighted count leaves, and a reset that comes before its
// window's end, a herd paced by the room the served answers publish keeps
// within 1.4× the ideal at every limit and phase of the windows against
// whole seconds, with no send before a time the server gave and no
// request failed. Paced by the release's probe alone, the phase of 900 ms
// ran 1.50×.
func TestPacingToASlidingWindowsRoom(t *testing.T) {
	for _, tc := range []struct {
		limit, total, workers int
		phase                 time.Duration // of the windows against whole seconds
	}{
		{20, 200, 16, 100 * time.Millisecond},
		{20, 200, 16, 500 * time.Millisecond},
		{20, 200, 16, 900 * time.Millisecond},
		{40, 200, 16, 300 * time.Millisecond},
		{40, 400, 32, 700 * time.Millisecond},
		{10, 100, 8, 600 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%d a second, phase %v", tc.limit, tc.phase), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(tc.phase) // the bubble starts on a whole second
				srv := &slidingServer{limit: tc.limit, window: time.Second, born: time.Now(), latency: 2 * time.Millisecond}
				const lead = 100 * time.Millisecond
				time.Sleep(lead)
				r := runHerdOn(t, srv, tc.total, tc.workers)
				ideal := slidingIdeal(tc.limit, tc.total, time.Second, lead)
				srv.mu.Lock()
				defer srv.mu.Unlock()
				t.Logf("%v against an ideal of %v (%.2f×), %d 429s", r.wall, ideal, r.wall.Seconds()/ideal.Seconds(), srv.refused)
				assert.Zero(t, r.failed, "no request fails")
				assert.Zero(t, srv.early, "no send before a time the server gave")
				assert.Equal(t, tc.total, srv.served)
				assert.LessOrEqual(t, r.wall.Seconds(), 1.4*ideal.Seconds(), "within 1.4× the ideal")
			})
		})
	}
}
