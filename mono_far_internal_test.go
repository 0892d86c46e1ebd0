package heed

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMonoKeepsOrderFarAhead: mono is what quotaUntil keeps a
// quota's reset as, and a reset may be as far ahead as WithMaxHold lets
// it (any Duration). A later time must never count lower: a reset more
// than 2^62 ns (about 146 years) after monoEpoch counts as that, not
// below every time now, as an overflow of int64 would.
func TestMonoKeepsOrderFarAhead(t *testing.T) {
	now := time.Now()
	for _, ahead := range []time.Duration{
		time.Hour,
		100 * 365 * 24 * time.Hour,
		150 * 365 * 24 * time.Hour,
		200 * 365 * 24 * time.Hour,
		time.Duration(math.MaxInt64),
	} {
		t.Run(ahead.String(), func(t *testing.T) {
			assert.Greater(t, mono(now.Add(ahead)), mono(now), "a later time counts higher")
		})
	}
}

// TestFarQuotaResetIsKept: with WithMaxHold(MaxInt64) (no bound), a
// response publishing a quota whose reset is a Unix time ~176 years ahead
// (in synctest's 2000; ~150 after monoEpoch) must leave the scope's
// quotaUntil ahead of now, so the scope is not quiet (forgettable) an hour
// later while the gate keeps the quota.
func TestFarQuotaResetIsKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		years int64 // the reset, this many years after synctest's now
	}{
		{"10 years", 10},
		{"176 years", 176},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reset := time.Now().Add(time.Duration(tc.years) * 365 * 24 * time.Hour).Unix()
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					h := http.Header{}
					h.Set("X-RateLimit-Remaining", "5")
					h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
					return &http.Response{StatusCode: http.StatusOK, Header: h, Body: http.NoBody, Request: r}, nil
				})
				tr := New(inner, WithMaxHold(time.Duration(math.MaxInt64)))
				req, err := http.NewRequest(http.MethodGet, "https://api.test/x", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()

				require.Len(t, tr.scopes, 1)
				for name, sl := range tr.scopes {
					assert.True(t, sl.published.Load(), "the scope published a quota")
					assert.Greater(t, sl.quotaUntil.Load(), mono(time.Now()), "the quota's reset is ahead")
					later := time.Now().Add(time.Hour)
					assert.True(t, tr.own.keeps(name, later), "the gate keeps the quota an hour on")
					tr.scopesMu.Lock()
					assert.False(t, sl.quiet(later), "so the scope is not quiet an hour on")
					tr.scopesMu.Unlock()
				}
			})
		})
	}
}
