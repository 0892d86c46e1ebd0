package main

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// zoo-bucket-seconds: a token bucket (golang.org/x/time/rate, full at the
// start) that answers a request it has no token for with 429 and
// Retry-After: the time until the next token in whole seconds, rounded up,
// as an API gateway that only speaks delta-seconds does. The next token is
// milliseconds away, so the hint is always "1": a client that honours it
// idles a second per refusal, although the bucket would serve again at
// once. The ideal is the burst at once, then one request per token:
// (N − b)/r.
func init() {
	(&zooScenario{
		name:    "zoo-bucket-seconds",
		order:   72,
		refusal: "429s",
		sets: []zooSet{
			{limit: bucketLimit{rate: 100, burst: 10}, total: 300, workers: 32},
			{limit: bucketLimit{rate: 50, burst: 5}, total: 300, workers: 32},
		},
		quickOmits: []string{"failsafe", "resty"},
	}).register()
}

// bucketLimit is a token bucket of rate tokens a second holding at most
// burst.
type bucketLimit struct {
	rate  float64
	burst int
}

// key, String, start and ideal make a bucketLimit a zooLimit.
func (l bucketLimit) key() string    { return fmt.Sprintf("r%g-b%d", l.rate, l.burst) }
func (l bucketLimit) String() string { return fmt.Sprintf("%g/s, burst %d", l.rate, l.burst) }

func (l bucketLimit) start() (zooServer, error) {
	return limiterServer(&secondsBucket{lim: rate.NewLimiter(rate.Limit(l.rate), l.burst)}), nil
}

// ideal is (total − burst)/rate: the burst at once, then a request per
// token.
func (l bucketLimit) ideal(_ time.Duration, total int) (time.Duration, string) {
	return time.Duration(float64(max(total-l.burst, 0)) / l.rate * float64(time.Second)),
		fmt.Sprintf("(%d − %d)/%g", total, l.burst, l.rate)
}

// secondsBucket admits a request when its limiter has a token now, and
// refuses it otherwise with Retry-After in whole seconds, rounded up.
type secondsBucket struct {
	lim *rate.Limiter
}

func (s *secondsBucket) admit(now time.Time, h http.Header) bool {
	res := s.lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	if wait == 0 {
		return true
	}
	res.CancelAt(now)
	h.Set("Retry-After", strconv.FormatInt(ceilSeconds(wait), 10))
	return false
}
