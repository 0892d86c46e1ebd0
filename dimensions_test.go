package heed

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSpentDimension(t *testing.T) {
	at := func(d time.Duration) string { return raNow.Add(d).Format(time.RFC3339) }
	for _, tt := range []struct {
		name   string
		header http.Header
		wait   time.Duration
		source string
		ok     bool
	}{
		{"nothing published", raHeader(), 0, "", false},
		{"Anthropic, tokens left", raHeader("anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-requests-reset", at(time.Minute), "anthropic-ratelimit-tokens-remaining", "38000", "anthropic-ratelimit-tokens-reset", at(2*time.Second)), 0, "", false},
		{"Anthropic tokens spent", raHeader("anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", at(12*time.Second)), 12 * time.Second, "anthropic-ratelimit-tokens-reset", true},
		{"Anthropic output tokens spent, alone", raHeader("anthropic-ratelimit-tokens-remaining", "10", "anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", at(20*time.Second)), 20 * time.Second, "anthropic-ratelimit-output-tokens-reset", true},
		{"two spent: the latest reset", raHeader("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", at(5*time.Second), "anthropic-ratelimit-input-tokens-remaining", "0", "anthropic-ratelimit-input-tokens-reset", at(9*time.Second)), 9 * time.Second, "anthropic-ratelimit-input-tokens-reset", true},
		{"Anthropic requests spent", raHeader("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", at(14*time.Second)), 14 * time.Second, "anthropic-ratelimit-requests-reset", true},
		{"a reset past", raHeader("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", at(-time.Minute)), 0, "anthropic-ratelimit-tokens-reset", true},
		{"a reset with a fraction and an offset", raHeader("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", raNow.Add(3500*time.Millisecond).In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano)), 3500 * time.Millisecond, "anthropic-ratelimit-tokens-reset", true},
		{"a reset that is no time", raHeader("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", "soon"), 0, "", false},
		{"a spent one without a reset", raHeader("anthropic-ratelimit-tokens-remaining", "0"), 0, "", false},
		{"OpenAI tokens spent", raHeader("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1s", "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "7.66s"), 7660 * time.Millisecond, "x-ratelimit-reset-tokens", true},
		{"OpenAI tokens spent, minutes", raHeader("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"), 6 * time.Minute, "x-ratelimit-reset-tokens", true},
		{"OpenAI tokens left", raHeader("x-ratelimit-remaining-tokens", "149984", "x-ratelimit-reset-tokens", "6m0s"), 0, "", false},
		{"remaining invalid", raHeader("x-ratelimit-remaining-tokens", "0.0", "x-ratelimit-reset-tokens", "6m0s"), 0, "", false},
		{"remaining repeated, differing", raHeader("x-ratelimit-remaining-tokens", "0", "x-ratelimit-remaining-tokens", "5", "x-ratelimit-reset-tokens", "6m0s"), 0, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wait, source, ok := spentDimension(tt.header, raNow)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.wait, wait)
			assert.Equal(t, tt.source, source)
		})
	}
}

// TestQuotaWithDimensions: a response that publishes dimensions gives its
// requests' quota (quota), and, when a dimension is spent, a hold until the
// latest spent one's reset (spentDimension); a served response is read by
// the field each vendor sends with its dimensions.
func TestQuotaWithDimensions(t *testing.T) {
	at := func(d time.Duration) string { return raNow.Add(d).Format(time.RFC3339) }
	for _, tt := range []struct {
		name      string
		header    http.Header
		remaining int64
		reset     time.Duration
		source    string // quota's; "": none
		hold      time.Duration
		holdFrom  string // spentDimension's; "": none
	}{
		{"Anthropic requests", raHeader("anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-requests-reset", at(time.Minute), "anthropic-ratelimit-tokens-remaining", "38000", "anthropic-ratelimit-tokens-reset", at(2*time.Second)), 49, time.Minute, "anthropic-ratelimit-requests-remaining", 0, ""},
		{"Anthropic tokens spent: held until their reset", raHeader("anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-requests-reset", at(time.Minute), "anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", at(2*time.Second)), 49, time.Minute, "anthropic-ratelimit-requests-remaining", 2 * time.Second, "anthropic-ratelimit-tokens-reset"},
		{"requests spent later than tokens: held to the later", raHeader("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", at(time.Minute), "anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", at(2*time.Second)), 0, time.Minute, "anthropic-ratelimit-requests-remaining", time.Minute, "anthropic-ratelimit-requests-reset"},
		{"OpenAI tokens spent", raHeader("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1s", "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"), 59, time.Second, "x-ratelimit-remaining-requests", 6 * time.Minute, "x-ratelimit-reset-tokens"},
		{"OpenAI tokens left", raHeader("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1s", "x-ratelimit-remaining-tokens", "100", "x-ratelimit-reset-tokens", "6m0s"), 59, time.Second, "x-ratelimit-remaining-requests", 0, ""},
		{"a spent dimension alone", raHeader("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "20ms"), 0, 0, "", 20 * time.Millisecond, "x-ratelimit-reset-tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, marked := tt.header["X-Ratelimit-Remaining-Requests"]
			_, anthropic := tt.header["Anthropic-Ratelimit-Requests-Remaining"]
			assert.Equal(t, marked || anthropic, markHeader(tt.header)&markQuota != 0)
			remaining, reset, source, ok := quota(tt.header, raNow)
			assert.Equal(t, tt.source != "", ok)
			assert.Equal(t, tt.remaining, remaining)
			assert.Equal(t, tt.reset, reset)
			assert.Equal(t, tt.source, source)
			hold, from, spent := spentDimension(tt.header, raNow)
			assert.Equal(t, tt.holdFrom != "", spent)
			assert.Equal(t, tt.hold, hold)
			assert.Equal(t, tt.holdFrom, from)
		})
	}
}

// FuzzDimensions: any values of a dimension's fields read without panic, as
// a wait never negative, named when given, and only for a dimension whose
// remaining count is 0. The seed corpus is testdata/fuzz/FuzzDimensions.
func FuzzDimensions(f *testing.F) {
	f.Add("0", raNow.Add(12*time.Second).Format(time.RFC3339), "0", "7.66s")
	f.Add("5", "2026-11-29T12:00:45Z", "10", "6m0s")
	f.Add("0", "2026-11-29T12:00:45.5+02:00", "0", "-1s")
	f.Fuzz(func(t *testing.T, tokRem, tokReset, oaiRem, oaiReset string) {
		h := http.Header{}
		for k, v := range map[string]string{"Anthropic-Ratelimit-Tokens-Remaining": tokRem, "Anthropic-Ratelimit-Tokens-Reset": tokReset, "X-Ratelimit-Remaining-Tokens": oaiRem, "X-Ratelimit-Reset-Tokens": oaiReset} {
			if v != "" {
				h.Set(k, v)
			}
		}
		wait, source, ok := spentDimension(h, raNow)
		if wait < 0 || ok != (source != "") {
			t.Fatalf("wait %v, source %q, ok %v", wait, source, ok)
		}
		if r, state := remainingField(h, "Anthropic-Ratelimit-Tokens-Remaining"); source == "anthropic-ratelimit-tokens-reset" && (state != remainingValid || r != 0) {
			t.Fatalf("a dimension with %q remaining read as spent", tokRem)
		}
		if r, state := remainingField(h, "X-Ratelimit-Remaining-Tokens"); source == "x-ratelimit-reset-tokens" && (state != remainingValid || r != 0) {
			t.Fatalf("a dimension with %q remaining read as spent", oaiRem)
		}
		if _, _, from, ok := quota(h, raNow); ok && markHeader(h)&markQuota == 0 {
			t.Fatalf("a quota from %s that markHeader does not mark", from)
		}
	})
}
