package heed_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/heed-go/heed"
)

// TestRetryBudgetUnderFullOutage is Finagle's test: under a frozen clock
// with every attempt failing, retries = ratio × N + MinPerSecond × Window.
func TestRetryBudgetUnderFullOutage(t *testing.T) {
	tests := []struct {
		name   string
		budget heed.Budget
		want   int64
	}{
		{"default", heed.Budget{}, 2100}, // 0.2 × 10000 + 10 × 10
		{"custom", heed.Budget{Ratio: 0.1, MinPerSecond: 5, Window: 4 * time.Second}, 1020}, // 0.1 × 10000 + 5 × 4
		{"no reserve", heed.Budget{Ratio: 0.05, MinPerSecond: -1}, 500},
		{"disabled", heed.Budget{Disabled: true}, 4 * 10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 10000
				var sends atomic.Int64
				rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					sends.Add(1)
					return &http.Response{StatusCode: 500, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
				})
				log, logs := observed()
				tr := heed.New(rt, heed.WithLogger(log), heed.WithPolicy(heed.Policy{Backoff: heed.Constant(0), Budget: tt.budget}))
				start := time.Now()
				for range n {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
					require.NoError(t, err)
					assert.Equal(t, 500, resp.StatusCode, "a refused retry delivers the last response")
				}
				require.Equal(t, start, time.Now(), "the clock stayed frozen")
				retries := sends.Load() - n
				assert.InDelta(t, tt.want, retries, 1)
				refused := logs.FilterField(zapcore.Field{Key: "reason", Type: zapcore.StringType, String: "retry budget"}).Len()
				if tt.budget.Disabled {
					assert.Zero(t, refused)
				} else {
					assert.Positive(t, refused)
				}
			})
		})
	}
}

func TestRetryBudgetNeverBlocksFirstAttemptsAndRefills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sends atomic.Int64
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sends.Add(1)
			return &http.Response{StatusCode: 502, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 2, Backoff: heed.Constant(0), Budget: heed.Budget{Ratio: -1, MinPerSecond: 1, Window: 10 * time.Second}}))
		send := func() {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			resp.Body.Close()
		}
		for range 20 {
			send()
		}
		assert.Equal(t, int64(30), sends.Load(), "20 first attempts, 10 retries")
		time.Sleep(11 * time.Second)
		sends.Store(0)
		for range 20 {
			send()
		}
		assert.Equal(t, int64(30), sends.Load(), "the window moved on: 10 more retries")
	})
}

func TestRetryBudgetPerScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sends atomic.Int64
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sends.Add(1)
			return &http.Response{StatusCode: 502, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 2, Backoff: heed.Constant(0), Budget: heed.Budget{Ratio: -1, MinPerSecond: 1, Window: time.Second}}))
		for _, host := range []string{"a.example", "b.example"} {
			for range 3 {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://"+host+"/", nil))
				require.NoError(t, err)
				resp.Body.Close()
			}
		}
		assert.Equal(t, int64(6+2), sends.Load(), "one retry per scope")
	})
}
