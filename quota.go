// Published quotas: how many more requests a response says its scope may
// send, and when that count is restored.

package heed

import (
	"net/http"
	"time"

	"github.com/heed-go/heed/internal/structured"
)

// Quota is what a response published about its scope: Remaining more sends
// are allowed until Reset.
type Quota struct {
	Remaining int64
	Reset     time.Time
}

// quota reads the quota a response publishes: the scope may send remaining
// more requests before the quota is restored, reset from now. The first
// source that is complete and valid wins, in this order:
//
//   - "RateLimit": the RateLimit field of the IETF draft -10; r and t of the
//     item with the smallest r (on a tie, the largest t). An item without t
//     gives no reset, so this source is then skipped.
//   - "RateLimit-Remaining": RateLimit-Remaining with RateLimit-Reset.
//   - "X-RateLimit-Remaining": X-RateLimit-Remaining with X-RateLimit-Reset
//     (GitHub; Unix seconds there).
//   - "x-rate-limit-remaining": with x-rate-limit-reset (X, Zendesk).
//   - "x-ratelimit-remaining-requests": with x-ratelimit-reset-requests
//     (OpenAI), a Go duration such as "6m0s", "1s" or "20ms", or plain
//     seconds, rounded up.
//   - "anthropic-ratelimit-requests-remaining": with
//     anthropic-ratelimit-requests-reset, an RFC 3339 time.
//
// A dimension that is spent (dimensions.go) is not a quota but a hold.
//
// For the *-Reset headers a value above half of now's Unix time is a Unix
// time in seconds, a past one a reset of 0; else it is seconds, decimals
// rounded up. ok is true only when both remaining and reset are valid: a source that is malformed,
// longer than 128 bytes, overflowing, or repeated with differing values is
// skipped. remaining and reset are never negative.
func quota(h http.Header, now time.Time) (remaining int64, reset time.Duration, source string, ok bool) {
	if vals := h[hdrRateLimit]; len(vals) > 0 {
		if rl, valid := scanRateLimit(vals); valid && rl.fewestRemaining >= 0 && rl.fewestReset >= 0 && rl.fewestReset <= maxWholeSeconds {
			return rl.fewestRemaining, time.Duration(rl.fewestReset) * time.Second, "RateLimit", true
		}
	}
	if r, d, valid := quotaPair(h, hdrRateLimitRemaining, hdrRateLimitReset, now, parseReset); valid {
		return r, d, "RateLimit-Remaining", true
	}
	if r, d, valid := quotaPair(h, hdrXRemaining, hdrXReset, now, parseReset); valid {
		return r, d, "X-RateLimit-Remaining", true
	}
	if r, d, valid := quotaPair(h, hdrXDashRemaining, hdrXDashReset, now, parseReset); valid {
		return r, d, "x-rate-limit-remaining", true
	}
	if r, d, valid := quotaPair(h, hdrRemainingRequests, hdrResetRequests, now, parseDurationReset); valid {
		return r, d, "x-ratelimit-remaining-requests", true
	}
	if r, d, valid := quotaPair(h, dimensions[0].remaining, dimensions[0].reset, now, parseTimeReset); valid {
		return r, d, "anthropic-ratelimit-requests-remaining", true
	}
	return 0, 0, "", false
}

// quotaPair reads a remaining count and its reset from two headers.
func quotaPair(h http.Header, remKey, resetKey string, now time.Time, parse func(string, time.Time) (time.Duration, bool)) (int64, time.Duration, bool) {
	rem, state := remainingField(h, remKey)
	if state != remainingValid {
		return 0, 0, false
	}
	v, present := singleField(h, resetKey)
	if !present {
		return 0, 0, false
	}
	d, ok := parse(v, now)
	if !ok {
		return 0, 0, false
	}
	return rem, d, true
}

// parseDurationReset parses an OpenAI x-ratelimit-reset-* value: plain
// seconds (decimals rounded up) or a Go duration such as "6m0s" or "20ms".
func parseDurationReset(s string, _ time.Time) (time.Duration, bool) {
	if s == "" || !isDigit(s[0]) {
		return 0, false // no sign, no leading "."
	}
	if d, ok := parseSeconds(s); ok {
		return d, true
	}
	if isDecimal(s) {
		return 0, false // plain seconds, but too many
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// isDecimal reports whether s is made only of digits and dots.
func isDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) && s[i] != '.' {
			return false
		}
	}
	return true
}

// RateLimit field (draft-ietf-httpapi-ratelimit-headers-10): a Structured
// Field List (RFC 9651) of Items whose parameters r (required) and t
// (optional) are non-negative Integers.

// rateLimit is what heed uses of a RateLimit field.
type rateLimit struct {
	exhaustedReset  int64 // largest t of an item with r=0; -1: none
	fewestRemaining int64 // smallest r; -1: no item
	fewestReset     int64 // t of that item, the largest on a tie; -1: it has none
}

// scanRateLimit parses the field lines of RateLimit as one List (RFC 9651
// §4.2 joins them). ok is false when the field is malformed as a whole: bad
// syntax, an inner list, a line longer than maxHintLen, or an item whose r
// is missing or whose r or t is not a non-negative Integer. Empty lines add
// nothing.
func scanRateLimit(lines []string) (rl rateLimit, ok bool) {
	rl = rateLimit{exhaustedReset: -1, fewestRemaining: -1, fewestReset: -1}
	for _, line := range lines {
		if len(line) > maxHintLen {
			return rl, false
		}
		l := structured.NewList(trimOWS(line))
		for !l.Done() {
			r, t, ok := l.Next()
			if !ok {
				return rl, false
			}
			if r == 0 && t > rl.exhaustedReset {
				rl.exhaustedReset = t
			}
			if rl.fewestRemaining < 0 || r < rl.fewestRemaining || r == rl.fewestRemaining && t > rl.fewestReset {
				rl.fewestRemaining, rl.fewestReset = r, t
			}
		}
	}
	return rl, true
}
