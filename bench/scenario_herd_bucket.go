package main

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/retryable"
)

// herd-bucket: a token bucket of 100 requests a second with a burst of 10;
// 32 goroutines send 300 GETs through one client. A refused request gets
// 429 with retry-after-ms, the exact milliseconds until the next token
// (rounded up), and no Retry-After: a coarse "Retry-After: 1" would make
// every client that honours hints idle a whole second per 429.
//
// heed is configured for this API as its README advises for APIs that send
// sub-second hints: MinWait 10 ms instead of the default 1 s. The peers
// keep their setup; none of them reads retry-after-ms, so they fall back to
// their backoff.
const (
	bucketRate    = 100
	bucketBurst   = 10
	bucketWorkers = 32
	bucketTotal   = 300
	bucketMinWait = 10 * time.Millisecond
)

func init() {
	const name = "herd-bucket"
	register(&Scenario{
		Name:  name,
		Order: 61,
		Rows:  herdRows(name, bucketTotal, bucketWorkers),
		Run: func(env *Env, cs []Client) Figures {
			if env.Quick {
				// The peers back off for up to 31 s here: too long for
				// -quick.
				cs = onlyClients(cs, "heed")
			}
			return runHerd(env, name, cs, bucketTotal, bucketWorkers, func() limiter {
				return &tokenBucket{rate: bucketRate, burst: bucketBurst, tokens: bucketBurst}
			}, bucketClient)
		},
	})
}

// bucketClient configures heed (and the heed/retryable column) with
// MinWait 10 ms for this API; other clients are left as they are.
func bucketClient(c Client) Client {
	p := heed.Policy{MaxAttempts: retries + 1, MinWait: bucketMinWait}
	switch c.Name {
	case "heed":
		c.New = func(next http.RoundTripper) Doer {
			t := transportOr(next)
			return &heedClient{t: t, hc: &http.Client{Transport: heed.New(t, heed.WithPolicy(p))}}
		}
	case "heed-retryable":
		c.New = func(next http.RoundTripper) Doer {
			rc := retryablehttp.NewClient()
			rc.Logger = nil
			if next != nil {
				rc.HTTPClient.Transport = next
			}
			retryable.Configure(rc, heed.WithPolicy(p))
			return &heedRetryable{c: rc}
		}
	}
	return c
}

// tokenBucket refills rate tokens a second up to burst; a request takes one
// or is refused with retry-after-ms, the milliseconds until the next token,
// rounded up.
type tokenBucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

func (b *tokenBucket) admit(now time.Time, h http.Header) bool {
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	ms := math.Ceil((1 - b.tokens) / b.rate * 1000)
	h.Set("retry-after-ms", strconv.FormatFloat(max(ms, 1), 'f', 0, 64))
	return false
}

// ideal: the burst at once, then one request per token.
func (b *tokenBucket) ideal(_ time.Time, total int) (time.Duration, string) {
	n := max(float64(total)-b.burst, 0)
	return time.Duration(n / b.rate * float64(time.Second)), fmt.Sprintf("burst %.0f, then %.0f/s", b.burst, b.rate)
}
