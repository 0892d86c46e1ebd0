// Hints: the wait a response asks for before the next request, read from
// Retry-After and its kin or from the RateLimit fields' resets, and the
// field-reading helpers the hint and quota parsers share.

package heed

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// maxHintLen is the longest field value, in bytes, that is read at all.
// Anything longer is no hint, decided before any other work.
const maxHintLen = 128

// Canonical keys (http.CanonicalHeaderKey) of the fields read here, so that
// every lookup is a plain map index.
const (
	hdrRetryAfter         = "Retry-After"
	hdrRetryAfterMs       = "Retry-After-Ms"
	hdrMsRetryAfterMs     = "X-Ms-Retry-After-Ms"
	hdrRateLimit          = "Ratelimit"
	hdrRateLimitRemaining = "Ratelimit-Remaining"
	hdrRateLimitReset     = "Ratelimit-Reset"
	hdrXRemaining         = "X-Ratelimit-Remaining"
	hdrXReset             = "X-Ratelimit-Reset"
	hdrXResetAfter        = "X-Ratelimit-Reset-After" // Discord: fractional seconds
	hdrXDashRemaining     = "X-Rate-Limit-Remaining"  // X (Twitter), Zendesk
	hdrXDashReset         = "X-Rate-Limit-Reset"
	hdrRemainingRequests  = "X-Ratelimit-Remaining-Requests"
	hdrResetRequests      = "X-Ratelimit-Reset-Requests"
)

const (
	// maxWholeSeconds and maxWholeMillis are the largest counts that fit
	// in a time.Duration.
	maxWholeSeconds = math.MaxInt64 / int64(time.Second)
	maxWholeMillis  = math.MaxInt64 / int64(time.Millisecond)
	// unixResetFloor is the least value a *-Reset may be read as a Unix
	// time from, whatever the clock says (see unixReset).
	unixResetFloor = 100_000_000
)

// ParseRetryAfter returns the wait a Retry-After value asks for, measured
// from now: delay-seconds ("120"), decimal seconds ("1.5", rounded up), or
// an HTTP-date in any of RFC 9110's three forms (a past date waits 0),
// spaces around ignored. It reports false for anything else: over 128
// bytes, signs, exponents, impossible dates, waits beyond a time.Duration.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	if len(value) > maxHintLen {
		return 0, false
	}
	s := trimOWS(value)
	if s == "" {
		return 0, false
	}
	if isDigit(s[0]) {
		return parseSeconds(s)
	}
	t, ok := parseHTTPDate(s, now)
	if !ok {
		return 0, false
	}
	return until(t, now)
}

// Hint returns the wait a response asks for before the next request, and
// the header it came from: the largest valid Retry-After (ParseRetryAfter),
// retry-after-ms or x-ms-retry-after-ms (on a tie, the first); else the
// IETF RateLimit field's largest t with r=0; else RateLimit-Reset
// (RateLimit-Remaining 0 or absent) or X-RateLimit-Reset
// (X-RateLimit-Remaining 0; with Discord's X-RateLimit-Reset-After, the
// longer) or x-rate-limit-reset (x-rate-limit-remaining 0: X, Zendesk), a
// Unix time when above half of now's Unix time, else seconds; else the
// latest reset of a spent dimension (dimensions.go: Anthropic's
// anthropic-ratelimit-*, OpenAI's tokens). An invalid, negative, overlong
// (128 bytes) or conflicting header gives no hint. Hint does not allocate.
func Hint(resp *http.Response, now time.Time) (wait time.Duration, source string, ok bool) {
	if resp == nil {
		return 0, "", false
	}
	h := resp.Header
	if v, present := singleField(h, hdrRetryAfter); present {
		if d, valid := ParseRetryAfter(v, now); valid {
			wait, source, ok = d, "Retry-After", true
		}
	}
	if v, present := singleField(h, hdrRetryAfterMs); present {
		if d, valid := parseMillis(v); valid && (!ok || d > wait) {
			wait, source, ok = d, "retry-after-ms", true
		}
	}
	if v, present := singleField(h, hdrMsRetryAfterMs); present {
		if d, valid := parseMillis(v); valid && (!ok || d > wait) {
			wait, source, ok = d, "x-ms-retry-after-ms", true
		}
	}
	if ok {
		return wait, source, true
	}

	if vals := h[hdrRateLimit]; len(vals) > 0 {
		if rl, valid := scanRateLimit(vals); valid && rl.exhaustedReset >= 0 && rl.exhaustedReset <= maxWholeSeconds {
			return time.Duration(rl.exhaustedReset) * time.Second, "RateLimit", true
		}
	}
	if rem, state := remainingField(h, hdrRateLimitRemaining); state != remainingInvalid && (state == remainingAbsent || rem == 0) {
		if v, present := singleField(h, hdrRateLimitReset); present {
			if d, valid := parseReset(v, now); valid {
				return d, "RateLimit-Reset", true
			}
		}
	}
	if rem, state := remainingField(h, hdrXRemaining); state == remainingValid && rem == 0 {
		wait, source, ok = 0, "", false
		if v, present := singleField(h, hdrXReset); present {
			if d, valid := parseReset(v, now); valid {
				wait, source, ok = d, "X-RateLimit-Reset", true
			}
		}
		if v, present := singleField(h, hdrXResetAfter); present {
			if d, valid := parseSecondsCeil(v); valid && (!ok || d > wait) {
				wait, source, ok = d, "X-RateLimit-Reset-After", true
			}
		}
		if ok {
			return wait, source, true
		}
	}
	if rem, state := remainingField(h, hdrXDashRemaining); state == remainingValid && rem == 0 {
		if v, present := singleField(h, hdrXDashReset); present {
			if d, valid := parseReset(v, now); valid {
				return d, "x-rate-limit-reset", true
			}
		}
	}
	return spentDimension(h, now)
}

// parseSecondsCeil parses a count of seconds, decimals rounded up to the
// millisecond, such as Discord's X-RateLimit-Reset-After: 64.57.
func parseSecondsCeil(s string) (time.Duration, bool) {
	d, ok := parseFractionalSeconds(s)
	if !ok || d > math.MaxInt64-time.Millisecond {
		return 0, false
	}
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond, true
}

// parseFractionalSeconds parses seconds with up to nine decimals, exact to
// the nanosecond: 1*DIGIT ["." 1*9DIGIT]. It reports false for anything
// else, a sign or an exponent included, and for a wait beyond a Duration.
func parseFractionalSeconds(s string) (time.Duration, bool) {
	whole, frac, dotted := strings.Cut(s, ".")
	secs, ok := parseDigits(whole)
	if !ok || secs > maxWholeSeconds || dotted && len(frac) > 9 {
		return 0, false
	}
	var nanos int64
	if dotted {
		if nanos, ok = parseDigits(frac); !ok {
			return 0, false
		}
		for range 9 - len(frac) {
			nanos *= 10
		}
	}
	if secs*int64(time.Second) > math.MaxInt64-nanos {
		return 0, false
	}
	return time.Duration(secs*int64(time.Second) + nanos), true
}

// singleField returns the value of a field that must appear once: ok is
// false when it is absent, longer than maxHintLen, or repeated with
// differing values (identical repeats are one value). Surrounding spaces
// and tabs are trimmed.
func singleField(h http.Header, key string) (string, bool) {
	vals := h[key]
	if len(vals) == 0 || len(vals[0]) > maxHintLen {
		return "", false
	}
	v := trimOWS(vals[0])
	for _, w := range vals[1:] {
		if trimOWS(w) != v {
			return "", false
		}
	}
	return v, true
}

const (
	remainingAbsent = iota
	remainingValid
	remainingInvalid
)

// remainingField reads a count of remaining requests (1*DIGIT).
func remainingField(h http.Header, key string) (int64, int) {
	if len(h[key]) == 0 {
		return 0, remainingAbsent
	}
	v, ok := singleField(h, key)
	if !ok {
		return 0, remainingInvalid
	}
	n, ok := parseDigits(v)
	if !ok {
		return 0, remainingInvalid
	}
	return n, remainingValid
}

// parseSeconds parses 1*DIGIT [ "." 1*DIGIT ] seconds, rounding a fraction up.
func parseSeconds(s string) (time.Duration, bool) {
	n, ok := parseDecimalCeil(s)
	if !ok || n > maxWholeSeconds {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// parseMillis parses 1*DIGIT milliseconds.
func parseMillis(s string) (time.Duration, bool) {
	n, ok := parseDigits(s)
	if !ok || n > maxWholeMillis {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// parseReset parses a *-Reset value: seconds (decimals rounded up), or a
// Unix time in seconds when unixReset says so.
func parseReset(s string, now time.Time) (time.Duration, bool) {
	n, ok := parseDecimalCeil(s)
	if !ok {
		return 0, false
	}
	if !unixReset(n, now) {
		return time.Duration(n) * time.Second, true
	}
	// Reject, before building a time.Time, a Unix time so far ahead that
	// the wait cannot be a Duration; until checks the rest exactly.
	nowSec := now.Unix()
	if nowSec < 0 && n > math.MaxInt64+nowSec || n-nowSec > maxWholeSeconds+1 {
		return 0, false
	}
	return until(time.Unix(n, 0), now)
}

// unixReset reports whether a *-Reset value n is a Unix time rather than a
// count of seconds, judged against now: it is when it exceeds half of now's
// Unix time (a delay of decades is no delay a server means), and at least
// unixResetFloor, for a clock near the epoch. So a reset 40 s ahead reads
// as 40 s whether the clock says 2026 or, under testing/synctest, 2000.
func unixReset(n int64, now time.Time) bool {
	return n > max(now.Unix()/2, unixResetFloor)
}

// until returns how long from now until t: 0 when t is not after now, and
// false when the difference does not fit in a Duration.
func until(t, now time.Time) (time.Duration, bool) {
	if !t.After(now) {
		return 0, true
	}
	d := t.Sub(now) // saturates at the largest Duration
	if !now.Add(d).Equal(t) {
		return 0, false
	}
	return d, true
}

// parseDecimalCeil parses 1*DIGIT [ "." 1*DIGIT ] and rounds it up to a whole
// number. It reports false on any other form or on overflow.
func parseDecimalCeil(s string) (int64, bool) {
	n, i, ok := leadingDigits(s)
	if !ok || i == 0 {
		return 0, false
	}
	if i == len(s) {
		return n, true
	}
	if s[i] != '.' || i+1 == len(s) {
		return 0, false
	}
	up := false
	for j := i + 1; j < len(s); j++ {
		if !isDigit(s[j]) {
			return 0, false
		}
		up = up || s[j] != '0'
	}
	if up {
		if n == math.MaxInt64 {
			return 0, false
		}
		n++
	}
	return n, true
}

// parseDigits parses 1*DIGIT into a non-negative int64.
func parseDigits(s string) (int64, bool) {
	n, i, ok := leadingDigits(s)
	return n, ok && i > 0 && i == len(s)
}

// leadingDigits returns the value of the digits s starts with and how many
// there are; ok is false when they overflow an int64.
func leadingDigits(s string) (n int64, i int, ok bool) {
	for ; i < len(s) && isDigit(s[i]); i++ {
		d := int64(s[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, i, false
		}
		n = n*10 + d
	}
	return n, i, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// trimOWS removes the spaces and tabs around s.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
