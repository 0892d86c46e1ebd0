package heed

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMarksSmallAndLarge: markHeader answers alike whether it looks at
// each key (a small header) or asks for each field (a large one).
func TestMarksSmallAndLarge(t *testing.T) {
	fields := map[string]marks{
		"Ratelimit": markQuota, "Ratelimit-Remaining": markQuota, "X-Ratelimit-Remaining": markQuota,
		"X-Rate-Limit-Remaining": markQuota, "X-Ratelimit-Remaining-Requests": markQuota,
		"Anthropic-Ratelimit-Requests-Remaining": markQuota,
		"Stripe-Should-Retry":                    markShouldRetry, "X-Should-Retry": markShouldRetry,
		"Age": markAge, "X-Shopify-Shop-Api-Call-Limit": markRoom, "": 0,
		// Near misses: no mark.
		"Ratelimit-Policy": 0, "X-Ratelimit-Limit": 0, "Anthropic-Ratelimit-Tokens-Limit": 0, "Should-Retry": 0, "Ag": 0,
		"X-Shopify-Shop-Api-Call": 0, "Shopify-Shop-Api-Call-Limit": 0,
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
			assert.Equal(t, want == markQuota, markHeader(h)&markQuota != 0, "%q with %d others", field, others)
		}
	}
	// A field set to nil is not there, at every size, as the readers of
	// each (Header.Get, h[k] != nil) take it.
	for field := range fields {
		for _, others := range []int{0, 8, 20} {
			h := http.Header{}
			for i := range others {
				h["X-Other-"+strconv.Itoa(i)] = []string{"x"}
			}
			h[field] = nil
			assert.Zero(t, markHeader(h), "%q set to nil with %d others", field, others)
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

// quotaRecorder is a QuotaGate that admits every send and keeps the quotas
// it is told of.
type quotaRecorder struct{ quotas []*Quota }

func (g *quotaRecorder) NotBefore(context.Context, string) (time.Time, error) {
	return time.Time{}, nil
}
func (g *quotaRecorder) Hold(context.Context, string, time.Time) error   { return nil }
func (g *quotaRecorder) Take(context.Context, string) (time.Time, error) { return time.Time{}, nil }
func (g *quotaRecorder) Done(_ context.Context, _ string, q *Quota, _ bool) error {
	g.quotas = append(g.quotas, q)
	return nil
}

// TestMarksOfTheHeaderTheClassifierLeft: a Classifier of the user's that
// names a vendor's quota in the fields heed reads has it counted, as the
// header stands once the Classifier is done.
func TestMarksOfTheHeaderTheClassifierLeft(t *testing.T) {
	inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"X-App-Left": {"3"}, "X-App-Reset": {"20"}},
			Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	classify := func(req *http.Request, resp *http.Response, err error) Verdict {
		if resp != nil && resp.Header.Get("X-App-Left") != "" {
			resp.Header.Set("X-RateLimit-Remaining", resp.Header.Get("X-App-Left"))
			resp.Header.Set("X-RateLimit-Reset", resp.Header.Get("X-App-Reset"))
		}
		return DefaultClassifier(req, resp, err)
	}
	g := &quotaRecorder{}
	tr := New(inner, WithGate(g), WithPolicy(Policy{Classify: classify}))
	req, err := http.NewRequest("GET", "https://api.example/x", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, g.quotas, 1)
	require.NotNil(t, g.quotas[0], "the quota the Classifier's fields name reaches the gate")
	assert.EqualValues(t, 3, g.quotas[0].Remaining)
}

// roundTripFunc answers with its own function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
