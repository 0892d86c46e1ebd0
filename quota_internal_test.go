package heed

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuota(t *testing.T) {
	unix := func(d time.Duration) string { return strconv.FormatInt(raNow.Add(d).Unix(), 10) }
	cases := []struct {
		name      string
		header    http.Header
		remaining int64
		reset     time.Duration
		source    string
		ok        bool
	}{
		{"none", raHeader("Content-Type", "text/plain"), 0, 0, "", false},
		{"nil header", nil, 0, 0, "", false},

		{"RateLimit", raHeader("RateLimit", `"default";r=50;t=30`), 50, 30 * time.Second, "RateLimit", true},
		{"RateLimit smallest r", raHeader("RateLimit", `"burst";r=5;t=1, "daily";r=2;t=3600`), 2, time.Hour, "RateLimit", true},
		{"RateLimit tie takes largest t", raHeader("RateLimit", `"a";r=2;t=30, "b";r=2;t=60, "c";r=2`), 2, time.Minute, "RateLimit", true},
		{"RateLimit exhausted", raHeader("RateLimit", `"a";r=0;t=7`), 0, 7 * time.Second, "RateLimit", true},
		{"RateLimit split over lines", raHeader("RateLimit", `"a";r=9;t=1`, "RateLimit", `"b";r=3;t=5`), 3, 5 * time.Second, "RateLimit", true},
		{"RateLimit smallest r has no t", raHeader("RateLimit", `"a";r=1, "b";r=5;t=60`), 0, 0, "", false},
		{"RateLimit without t falls through", raHeader("RateLimit", `"a";r=1`, "RateLimit-Remaining", "4", "RateLimit-Reset", "9"), 4, 9 * time.Second, "RateLimit-Remaining", true},
		{"RateLimit malformed falls through", raHeader("RateLimit", `"a";r=1;t=2,`, "X-RateLimit-Remaining", "4", "X-RateLimit-Reset", "9"), 4, 9 * time.Second, "X-RateLimit-Remaining", true},
		{"RateLimit t overflows", raHeader("RateLimit", `"a";r=1;t=99999999999`), 0, 0, "", false},
		{"RateLimit beats the rest", raHeader("RateLimit", `"a";r=7;t=3`, "RateLimit-Remaining", "4", "RateLimit-Reset", "9", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "2"), 7, 3 * time.Second, "RateLimit", true},

		{"RateLimit-Remaining and Reset", raHeader("RateLimit-Remaining", "10", "RateLimit-Reset", "30"), 10, 30 * time.Second, "RateLimit-Remaining", true},
		{"RateLimit-Reset as Unix time", raHeader("RateLimit-Remaining", "10", "RateLimit-Reset", unix(time.Minute)), 10, time.Minute, "RateLimit-Remaining", true},
		{"RateLimit-Remaining alone", raHeader("RateLimit-Remaining", "10"), 0, 0, "", false},
		{"RateLimit-Reset alone", raHeader("RateLimit-Reset", "30"), 0, 0, "", false},
		{"RateLimit-Remaining invalid", raHeader("RateLimit-Remaining", "1.0", "RateLimit-Reset", "30"), 0, 0, "", false},
		{"RateLimit-Remaining conflicting", raHeader("RateLimit-Remaining", "1", "RateLimit-Remaining", "2", "RateLimit-Reset", "30"), 0, 0, "", false},
		{"x-rate-limit (X)", raHeader("x-rate-limit-limit", "900", "x-rate-limit-remaining", "899", "x-rate-limit-reset", unix(15*time.Minute)), 899, 15 * time.Minute, "x-rate-limit-remaining", true},
		{"x-rate-limit without a reset", raHeader("x-rate-limit-remaining", "899"), 0, 0, "", false},
		{"RateLimit-Remaining beats X-", raHeader("RateLimit-Remaining", "10", "RateLimit-Reset", "30", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "2"), 10, 30 * time.Second, "RateLimit-Remaining", true},

		{"GitHub", raHeader("X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", unix(time.Hour)), 4999, time.Hour, "X-RateLimit-Remaining", true},
		{"GitHub reset past", raHeader("X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", unix(-time.Hour)), 4999, 0, "X-RateLimit-Remaining", true},
		{"X- reset in seconds", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "60"), 0, time.Minute, "X-RateLimit-Remaining", true},
		{"X- remaining negative", raHeader("X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", "60"), 0, 0, "", false},
		{"X- remaining overflows", raHeader("X-RateLimit-Remaining", "99999999999999999999", "X-RateLimit-Reset", "60"), 0, 0, "", false},
		{"X- remaining largest", raHeader("X-RateLimit-Remaining", "9223372036854775807", "X-RateLimit-Reset", "60"), 9223372036854775807, time.Minute, "X-RateLimit-Remaining", true},
		{"X- reset overflows", raHeader("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "9223372036854775807"), 0, 0, "", false},
		{"X- reset oversized", raHeader("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", strings.Repeat("0", 129)), 0, 0, "", false},
		{"X- beats OpenAI", raHeader("X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "60", "x-ratelimit-remaining-requests", "1", "x-ratelimit-reset-requests", "1s"), 3, time.Minute, "X-RateLimit-Remaining", true},

		{"OpenAI minutes", raHeader("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "6m0s"), 59, 6 * time.Minute, "x-ratelimit-remaining-requests", true},
		{"OpenAI seconds", raHeader("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1s"), 59, time.Second, "x-ratelimit-remaining-requests", true},
		{"OpenAI milliseconds", raHeader("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20ms"), 0, 20 * time.Millisecond, "x-ratelimit-remaining-requests", true},
		{"OpenAI fractional", raHeader("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1h2m3.5s"), 0, time.Hour + 2*time.Minute + 3500*time.Millisecond, "x-ratelimit-remaining-requests", true},
		{"OpenAI plain seconds", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "2"), 3, 2 * time.Second, "x-ratelimit-remaining-requests", true},
		{"OpenAI plain decimal seconds", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "1.5"), 3, 2 * time.Second, "x-ratelimit-remaining-requests", true},
		{"OpenAI negative", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "-1s"), 0, 0, "", false},
		{"OpenAI plus", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "+1s"), 0, 0, "", false},
		{"OpenAI leading dot", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", ".5s"), 0, 0, "", false},
		{"OpenAI unknown unit", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "1x"), 0, 0, "", false},
		{"OpenAI overflow", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "99999999999h"), 0, 0, "", false},
		{"OpenAI plain seconds overflow", raHeader("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "99999999999"), 0, 0, "", false},
		{"OpenAI remaining invalid", raHeader("x-ratelimit-remaining-requests", "many", "x-ratelimit-reset-requests", "1s"), 0, 0, "", false},
		{"OpenAI reset alone", raHeader("x-ratelimit-reset-requests", "1s"), 0, 0, "", false},
		{"OpenAI tokens are not requests", raHeader("x-ratelimit-remaining-tokens", "100", "x-ratelimit-reset-tokens", "1s"), 0, 0, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			remaining, reset, source, ok := quota(c.header, raNow)
			require.Equal(t, c.ok, ok)
			assert.Equal(t, c.remaining, remaining)
			assert.Equal(t, c.reset, reset)
			assert.Equal(t, c.source, source)
		})
	}
}

func TestQuotaDoesNotAllocate(t *testing.T) {
	for _, h := range []http.Header{
		raHeader("Content-Type", "application/json"),
		raHeader("RateLimit", `"burst";r=5;t=1, "daily";r=2;t=3600`),
		raHeader("X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", "1795000000"),
		raHeader("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "6m0s"),
	} {
		allocs := testing.AllocsPerRun(1000, func() { quota(h, raNow) })
		assert.Zero(t, allocs, "quota on %v", h)
	}
}
