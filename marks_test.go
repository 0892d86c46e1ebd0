package heed

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMarksSmallAndLarge: markHeader answers alike whether it looks at
// each key (a small header) or asks for each field (a large one).
func TestMarksSmallAndLarge(t *testing.T) {
	fields := map[string]marks{
		"Ratelimit": markQuota, "Ratelimit-Remaining": markQuota, "X-Ratelimit-Remaining": markQuota,
		"X-Rate-Limit-Remaining": markQuota, "X-Ratelimit-Remaining-Requests": markQuota,
		"Anthropic-Ratelimit-Requests-Remaining": markQuota,
		"Stripe-Should-Retry":                    markShouldRetry, "X-Should-Retry": markShouldRetry,
		"Age": markAge, "": 0,
		// Near misses: no mark.
		"Ratelimit-Policy": 0, "X-Ratelimit-Limit": 0, "Anthropic-Ratelimit-Tokens-Limit": 0, "Should-Retry": 0, "Ag": 0,
	}
	for field, want := range fields {
		for _, others := range []int{0, 3, 7, 8, 20} {
			h := http.Header{}
			for i := range others {
				h["X-Other-"+strconv.Itoa(i)] = []string{"x"}
			}
			if field != "" {
				h[field] = []string{"1"}
			}
			assert.Equal(t, want, markHeader(h), "%q with %d others", field, others)
			assert.Equal(t, want == markQuota, publishesQuota(h), "%q with %d others", field, others)
		}
	}
	all := http.Header{"Age": {"1"}, "X-Should-Retry": {"true"}, "Ratelimit": {"x"}}
	assert.Equal(t, markQuota|markShouldRetry|markAge, markHeader(all))
}

func BenchmarkMarks(b *testing.B) {
	for _, n := range []int{1, 8, 15} {
		h := http.Header{}
		for i := range n {
			h["X-Header-"+strconv.Itoa(i)] = []string{"x"}
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				markHeader(h)
			}
		})
	}
}
