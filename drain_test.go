package heed_test

// Tests of a limit's drain against Shopify's leaky bucket, its fill read
// stale or by a fleet (release.go: drained, drains).

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed"
	"github.com/stretchr/testify/assert"
)

// staleFill publishes b's fill as shopifyFill does, as it stood lag before:
// a cache or replica that adds no Age.
func staleFill(b *leakyBucket, size int, lag time.Duration) func() http.Header {
	type snap struct {
		at   time.Time
		fill float64
	}
	var snaps []snap
	return func() http.Header {
		now := time.Now()
		snaps = append(snaps, snap{now, b.excess})
		fill := 0.0
		for i := len(snaps) - 1; i >= 0; i-- {
			if !snaps[i].at.After(now.Add(-lag)) {
				fill = snaps[i].fill
				break
			}
		}
		return http.Header{"X-Shopify-Shop-Api-Call-Limit": {fmt.Sprintf("%d/%d", int(math.Ceil(fill)), size)}}
	}
}

// TestPacingToAStaleFill: one Transport of 32 workers against Shopify's
// 80 at 4 a second, answers in 300 ms, its fill read from a copy half a
// second or a second old. Its throttles publish room as often as not; a
// drain measured from an older spent throttle once collapsed the pace in
// about one run in four (113 to 215 of 400 requests deferred, waits of
// 61 s). Now no request fails, within 1.1× the ideal.
func TestPacingToAStaleFill(t *testing.T) {
	for _, lag := range []time.Duration{500 * time.Millisecond, time.Second} {
		t.Run(fmt.Sprintf("fill %v old", lag), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &leakyBucket{rate: 4, burst: 79}
				srv := &limitServer{lim: b, latency: 300 * time.Millisecond, hint: shopifyRetry, publish: staleFill(b, 80, lag)}
				r := runHerd(t, srv, 400, 32)
				ideal := time.Duration(float64(400-80)/4*float64(time.Second)) + 300*time.Millisecond
				t.Logf("%v against an ideal of %v, %d 429s", r.wall, ideal, r.refused)
				assert.Zero(t, r.failed, "no request fails")
				assert.Zero(t, r.early, "no send before a time the server gave")
				assert.LessOrEqual(t, r.wall.Seconds(), 1.1*ideal.Seconds(), "within 1.1× the ideal")
			})
		})
	}
}

// TestPacingAFleetByItsDrain: four Transports of 16 workers against
// Shopify's 400 at 20 a second, answers in 300 ms. Sharing holds through
// a gate that does not keep the pace, each finds the others' holds and
// paces by the room's steps, not at the drain it reads, which is the
// whole limit's: no more 429s than before the drain (measured 237 to 590
// over twenty runs, against 255 to 623 before, and up to 724 paced at the
// drain). With a gate each, the Transports cannot know of one another and
// each paces at what the others left it (docs/pacing.md); no request
// fails either way.
func TestPacingAFleetByItsDrain(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("holds shared %v", shared), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &leakyBucket{rate: 20, burst: 399}
				srv := &limitServer{lim: b, latency: 300 * time.Millisecond, hint: shopifyRetry, publish: shopifyFill(b, 400)}
				gate := func() heed.Gate { return heed.NewGate() }
				if shared {
					g := downPace{heed.NewGate().(heed.QuotaGate)}
					gate = func() heed.Gate { return g }
				}
				r := runFleetHerd(t, srv, 1600, 4, 16, gate)
				t.Logf("%v against an ideal of 1m0.3s, %d 429s", r.wall, r.refused)
				assert.Zero(t, r.failed)
				assert.Equal(t, 1600, r.served)
				if shared {
					assert.Zero(t, r.early, "no send before a time the server gave")
					assert.LessOrEqual(t, r.refused, 650, "no more 429s than before the drain")
				}
			})
		})
	}
}
