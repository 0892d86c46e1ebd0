package heed_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slidingWindow is a sliding window counter as go-chi/httprate keeps one:
// limit requests a window, a request admitted while the previous window's
// count, weighted by the share of it the sliding window still covers, plus
// the current window's, rounded, leaves room for it. Its windows start at
// the instant it was made (born), not on whole seconds. Every answer
// publishes X-RateLimit-Limit, -Remaining, and -Reset: the current
// window's end in whole Unix seconds, rounded down, so a reset that may
// come before the window's end (published); a refusal is told the
// window's length.
type slidingWindow struct {
	limit  int
	window time.Duration
	born   time.Time

	start      time.Time // the current window's
	prev, curr int
	room       int // what the last decision left
}

func (w *slidingWindow) admit(now time.Time) (bool, time.Duration) {
	start := w.born.Add(now.Sub(w.born).Truncate(w.window))
	switch {
	case w.start.IsZero() || start.Sub(w.start) > w.window:
		w.prev, w.curr = 0, 0
	case start.After(w.start):
		w.prev, w.curr = w.curr, 0
	}
	w.start = start
	into := now.Sub(start).Seconds() / w.window.Seconds()
	rate := int(math.Round(float64(w.prev)*(1-into) + float64(w.curr)))
	if rate+1 > w.limit {
		w.room = max(w.limit-rate, 0)
		return false, w.window
	}
	w.curr++
	w.room = w.limit - rate - 1
	return true, 0
}

// published is the headers of the answer to the last request admit decided.
func (w *slidingWindow) published() http.Header {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(w.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(w.room))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(w.start.Add(w.window).Unix(), 10))
	return h
}

// runSliding runs, in a bubble that starts on a whole second, a herd of
// total GETs from workers goroutines against a slidingWindow of limit a
// second made phase past that second, whose answers take latency. The
// herd starts slidingLead after the window was made. It returns the
// server, for what it decided, and the herd's result.
func runSliding(t *testing.T, limit, total, workers int, phase, latency time.Duration) (*limitServer, herdResult) {
	time.Sleep(phase)
	w := &slidingWindow{limit: limit, window: time.Second, born: time.Now()}
	srv := &limitServer{lim: w, latency: latency, hint: wholeSeconds, publish: w.published}
	time.Sleep(slidingLead)
	return srv, runHerd(t, srv, total, workers)
}

// slidingSet is a herd against a sliding window: its limit a second,
// total GETs from workers goroutines, and the phase of the windows
// against whole seconds.
type slidingSet struct {
	limit, total, workers int
	phase                 time.Duration
}

// slidingLead is how long after its window was made runSliding's herd
// starts.
const slidingLead = 100 * time.Millisecond

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
// window's end, a herd paced by the room the served answers publish
// finishes, on average over several limits and the phases of the windows
// against whole seconds where the release's probe alone did worst, within
// 1.4× the ideal, with no send before a time the server gave and no
// request failed. The mean is what is bound: one run's order of goroutines
// moves each case by a few hundredths either way. Measured over eleven
// runs, the mean is 1.28× to 1.29× with the room and the drain it shows
// (docs/pacing.md).
func TestPacingToASlidingWindowsRoom(t *testing.T) {
	var ratios []float64
	for _, tc := range []slidingSet{
		{10, 100, 16, 150 * time.Millisecond},
		{10, 100, 16, 300 * time.Millisecond},
		{20, 200, 16, 400 * time.Millisecond},
		{20, 200, 16, 800 * time.Millisecond},
		{20, 200, 16, 850 * time.Millisecond},
		{40, 400, 16, 850 * time.Millisecond},
		{40, 400, 32, 950 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%d a second, phase %v", tc.limit, tc.phase), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, r := runSliding(t, tc.limit, tc.total, tc.workers, tc.phase, 2*time.Millisecond)
				ideal := slidingIdeal(tc.limit, tc.total, time.Second, slidingLead)
				ratio := r.wall.Seconds() / ideal.Seconds()
				ratios = append(ratios, ratio)
				t.Logf("%v against an ideal of %v (%.2f×), %d 429s", r.wall, ideal, ratio, r.refused)
				assert.Zero(t, r.failed, "no request fails")
				assert.Zero(t, r.early, "no send before a time the server gave")
				assert.Equal(t, tc.total, r.served)
			})
		})
	}
	mean := 0.0
	for _, r := range ratios {
		mean += r / float64(len(ratios))
	}
	t.Logf("mean %.3f× the ideal", mean)
	assert.LessOrEqual(t, mean, 1.4, "within 1.4× the ideal on average")
}

// shopifyFill publishes b's fill as Shopify REST does on every answer
// (X-Shopify-Shop-Api-Call-Limit: 32/40), b being a bucket of size
// requests: burst size − 1, as nginx counts it.
func shopifyFill(b *leakyBucket, size int) func() http.Header {
	return func() http.Header {
		return http.Header{"X-Shopify-Shop-Api-Call-Limit": {fmt.Sprintf("%d/%d", int(math.Ceil(b.excess)), size)}}
	}
}

// shopifyRetry is Shopify's refusal: Retry-After: 2.0.
func shopifyRetry(time.Duration) http.Header { return http.Header{"Retry-After": {"2.0"}} }

// TestPacingToALeakyBucketsFill: against Shopify REST's leaky bucket, size
// requests that leak at rate a second, whose 429 says Retry-After: 2.0
// whatever the fill, and whose every answer publishes its fill
// (shopify.dev, REST Admin API rate limits), a herd finishes within 1.5×
// the ideal, (N − size)/rate, at each plan's size and rate, with no send
// before a time the server gave and no request failed.
func TestPacingToALeakyBucketsFill(t *testing.T) {
	for _, tc := range []struct {
		size           int
		rate           float64
		total, workers int
	}{
		{40, 2, 100, 8},
		{80, 4, 200, 16},
		{400, 20, 800, 32},
		{40, 2, 160, 32},
	} {
		t.Run(fmt.Sprintf("%d at %g a second", tc.size, tc.rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &leakyBucket{rate: tc.rate, burst: float64(tc.size - 1)}
				srv := &limitServer{lim: b, latency: 2 * time.Millisecond, hint: shopifyRetry, publish: shopifyFill(b, tc.size)}
				r := runHerd(t, srv, tc.total, tc.workers)
				ideal := time.Duration(float64(tc.total-tc.size) / tc.rate * float64(time.Second))
				t.Logf("%v against an ideal of %v (%.2f×), %d 429s", r.wall, ideal, r.wall.Seconds()/ideal.Seconds(), r.refused)
				assert.Zero(t, r.failed, "no request fails")
				assert.Zero(t, r.early, "no send before a time the server gave")
				assert.Equal(t, tc.total, r.served)
				assert.LessOrEqual(t, r.wall.Seconds(), 1.5*ideal.Seconds(), "within 1.5× the ideal")
			})
		})
	}
}

// TestPacingToRoomAtEveryLatency: against limits that publish their room,
// answered in 2 ms, in a second or more as media and AI generation's are,
// or in a mix of both, a published room is as old as its answer when it
// arrives, and the sends in flight meanwhile are the pace's own. The room
// still steers the pace and does not collapse it. Against Shopify's leaky
// bucket, whose refusal says Retry-After: 2.0 whatever its fill, the
// drain its rooms tell paces the herd within 1.1× the ideal, with no more
// 429s than twice the workers and ten: the first herd's, and a few while
// the drain is learned. Against httprate's sliding window, within 2× the
// ideal. The ideal is the server's, and one answer's time, or the workers'
// own: their sends one after the other. No request fails, and no send goes
// before a time the server gave. docs/pacing.md has the figures.
func TestPacingToRoomAtEveryLatency(t *testing.T) {
	type shape struct {
		limit          int     // a window's sends a second; a bucket's size
		rate           float64 // a bucket's drain a second; 0: a window
		total, workers int
	}
	buckets := []shape{{40, 2, 200, 32}, {80, 4, 400, 32}, {400, 20, 1600, 64}, {40, 2, 200, 8}}
	windows := []shape{{10, 0, 200, 32}, {20, 0, 400, 32}, {40, 0, 800, 64}}
	ms := time.Millisecond
	for _, latencies := range [][]time.Duration{
		{2 * ms}, {300 * ms}, {800 * ms}, {1500 * ms}, {2000 * ms}, {3000 * ms},
		{50 * ms, 50 * ms, 50 * ms, 5000 * ms},
		{200 * ms, 200 * ms, 3000 * ms},
	} {
		slowest := slices.Max(latencies)
		shapes := buckets
		if slowest <= 2*time.Second {
			// A window answered in 3 s: see docs/pacing.md.
			shapes = append(slices.Clone(buckets), windows...)
		}
		for _, tc := range shapes {
			name := fmt.Sprintf("bucket of %d at %g, %d workers, answers in %v", tc.limit, tc.rate, tc.workers, latencies)
			if tc.rate == 0 {
				name = fmt.Sprintf("window of %d, %d workers, answers in %v", tc.limit, tc.workers, latencies)
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var srv *limitServer
					var ideal time.Duration
					bound := 2.0
					if tc.rate == 0 {
						time.Sleep(300 * time.Millisecond)
						w := &slidingWindow{limit: tc.limit, window: time.Second, born: time.Now()}
						srv = &limitServer{lim: w, latencies: latencies, hint: wholeSeconds, publish: w.published}
						const lead = 100 * time.Millisecond
						time.Sleep(lead)
						ideal = slidingIdeal(tc.limit, tc.total, time.Second, lead) + slowest
					} else {
						bound = 1.1
						b := &leakyBucket{rate: tc.rate, burst: float64(tc.limit - 1)}
						srv = &limitServer{lim: b, latencies: latencies, hint: shopifyRetry, publish: shopifyFill(b, tc.limit)}
						ideal = time.Duration(float64(tc.total-tc.limit)/tc.rate*float64(time.Second)) + slowest
					}
					var each time.Duration
					for _, l := range latencies {
						each += l / time.Duration(len(latencies))
					}
					ideal = max(ideal, time.Duration(tc.total/tc.workers)*each)
					r := runHerd(t, srv, tc.total, tc.workers)
					ratio := r.wall.Seconds() / ideal.Seconds()
					t.Logf("%v against an ideal of %v (%.2f×), %d 429s", r.wall, ideal, ratio, r.refused)
					assert.Zero(t, r.failed, "no request failed")
					assert.Zero(t, r.early, "no send before a time the server gave")
					assert.Equal(t, tc.total, r.served)
					assert.LessOrEqual(t, ratio, bound)
					if tc.rate > 0 {
						assert.LessOrEqual(t, r.refused, 2*tc.workers+10, "429s")
					}
				})
			})
		}
	}
}

// TestPacingAsksTheRoomAtTheFirstReopen: a sliding window's whole-second
// Retry-After does not say how much of its limit comes back at the hold's
// end. A window whose end the herd's hold missed by most of a window has
// given back only the share the window has moved on, and a reopen that let
// the herd's burst go at once drew refusals within milliseconds, and a
// second's hold more. Asked with one send, the room the window publishes
// is what the reopen lets go: at several limits and herds, and phases of
// the windows against whole seconds where the first reopen falls early in
// a window, no send of the reopen is refused (none within 20 ms of it; a
// burst's were within 9 ms), no request fails and none goes early.
func TestPacingAsksTheRoomAtTheFirstReopen(t *testing.T) {
	for _, tc := range []slidingSet{
		{10, 60, 16, 500 * time.Millisecond},
		{20, 100, 16, 650 * time.Millisecond},
		{20, 100, 32, 800 * time.Millisecond},
		{20, 200, 16, 850 * time.Millisecond},
		{40, 200, 16, 550 * time.Millisecond},
		{40, 200, 32, 700 * time.Millisecond},
		{40, 200, 16, 900 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%d a second, %d workers, phase %v", tc.limit, tc.workers, tc.phase), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, r := runSliding(t, tc.limit, tc.total, tc.workers, tc.phase, 2*time.Millisecond)
				assert.Zero(t, r.failed, "no request fails")
				assert.Zero(t, r.early, "no send before a time the server gave")
				srv.mu.Lock()
				defer srv.mu.Unlock()
				require.NotEmpty(t, srv.refusals, "the herd ran into the window")
				reopen := srv.refusals[0].until // the first whole-second hold's end
				var refused []time.Duration
				for _, d := range srv.decided {
					if !d.ok && !d.at.Before(reopen) && d.at.Before(reopen.Add(20*time.Millisecond)) {
						refused = append(refused, d.at.Sub(reopen))
					}
				}
				t.Logf("%v, %d 429s; refused at the first reopen: %v", r.wall, r.refused, refused)
				assert.Empty(t, refused, "the first reopen lets go what the window has room for")
			})
		})
	}
}
