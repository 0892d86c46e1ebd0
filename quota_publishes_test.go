package heed

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPublishesQuotaSmallAndLarge: publishesQuota answers alike whether it
// looks at each key (a small header) or asks for each field (a large one).
func TestPublishesQuotaSmallAndLarge(t *testing.T) {
	for _, field := range []string{"Ratelimit", "Ratelimit-Remaining", "X-Ratelimit-Remaining", "X-Rate-Limit-Remaining", "X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Requests-Remaining", ""} {
		for _, others := range []int{0, 3, 7, 8, 20} {
			h := http.Header{}
			for i := range others {
				h["X-Other-"+strconv.Itoa(i)] = []string{"x"}
			}
			if field != "" {
				h[field] = []string{"1"}
			}
			assert.Equal(t, field != "", publishesQuota(h), "%q with %d others", field, others)
		}
	}
	assert.False(t, publishesQuota(http.Header{"Ratelimit-Policy": {"x"}, "X-Ratelimit-Limit": {"5"}, "Anthropic-Ratelimit-Tokens-Limit": {"9"}}), "no remaining count")
}

func BenchmarkPublishesQuota(b *testing.B) {
	for _, n := range []int{1, 8, 15} {
		h := http.Header{}
		for i := range n {
			h["X-Header-"+strconv.Itoa(i)] = []string{"x"}
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				publishesQuota(h)
			}
		})
	}
}
