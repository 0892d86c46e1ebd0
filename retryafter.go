package heed

import (
	"math"
	"net/http"
	"time"
	"unicode/utf8"
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
	hdrRemainingRequests  = "X-Ratelimit-Remaining-Requests"
	hdrResetRequests      = "X-Ratelimit-Reset-Requests"
)

const (
	// maxWholeSeconds and maxWholeMillis are the largest counts that fit
	// in a time.Duration.
	maxWholeSeconds = math.MaxInt64 / int64(time.Second)
	maxWholeMillis  = math.MaxInt64 / int64(time.Millisecond)
	// unixResetAbove: a *-Reset value above it is a Unix time in seconds.
	unixResetAbove = 1_000_000_000
)

// ParseRetryAfter parses a Retry-After field value and returns the wait it
// asks for, measured from now. It accepts:
//
//   - delay-seconds (RFC 9110 §10.2.3, 1*DIGIT), such as "120";
//   - decimal seconds such as "2.0" or "1.5" (sent by some APIs, not by the
//     RFC), rounded up to the next whole second;
//   - an HTTP-date in each of the three forms of RFC 9110 §5.6.7:
//     IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), RFC 850
//     ("Sunday, 06-Nov-94 08:49:37 GMT", whose two-digit year is read by the
//     RFC's 50-year rule relative to now) and asctime
//     ("Sun Nov  6 08:49:37 1994"). Day and month names are matched without
//     regard to case; the weekday is checked for spelling but not against
//     the date. A date in the past is a valid wait of 0.
//
// Surrounding spaces and tabs are ignored. It reports false for anything
// else: values longer than 128 bytes (rejected before any other work),
// signs, exponents, inner spaces, impossible dates, and waits that do not
// fit in a time.Duration. The wait is never negative.
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

// Hint returns the wait a response asks for before the next request, and the
// name of the header it came from.
//
// Retry-After (see ParseRetryAfter), retry-after-ms and x-ms-retry-after-ms
// (whole milliseconds) are read first, and the largest valid one wins; on a
// tie the first in that order. Only when none of them is valid, in order:
// "RateLimit" (the IETF RateLimit fields draft -10), the largest t of an item
// with r=0; "RateLimit-Reset" when RateLimit-Remaining is 0 or absent;
// "X-RateLimit-Reset" when X-RateLimit-Remaining is 0. A *-Reset value above
// 1e9 is a Unix time in seconds, else seconds.
//
// A header that is invalid, negative, longer than 128 bytes, overflowing, or
// repeated with differing values gives no hint; a malformed RateLimit field
// is ignored as a whole. The wait is never negative. Hint does not allocate.
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
		if rl, valid := scanRateLimit(vals); valid && rl.zeroT >= 0 && rl.zeroT <= maxWholeSeconds {
			return time.Duration(rl.zeroT) * time.Second, "RateLimit", true
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
		if v, present := singleField(h, hdrXReset); present {
			if d, valid := parseReset(v, now); valid {
				return d, "X-RateLimit-Reset", true
			}
		}
	}
	return 0, "", false
}

// publishesQuota reports whether h has a field that quota reads a remaining
// count from, so that the caller can skip quota, and reading the clock for
// it, on the common response that has none.
func publishesQuota(h http.Header) bool {
	return h["Ratelimit"] != nil || h["Ratelimit-Remaining"] != nil ||
		h["X-Ratelimit-Remaining"] != nil || h["X-Ratelimit-Remaining-Requests"] != nil
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
//   - "x-ratelimit-remaining-requests": with x-ratelimit-reset-requests
//     (OpenAI), a Go duration such as "6m0s", "1s" or "20ms", or plain
//     seconds, rounded up.
//
// For both *-Reset headers a value above 1e9 is a Unix time in seconds, a
// past one a reset of 0; else it is seconds, decimals rounded up. ok is true
// only when both remaining and reset are valid: a source that is malformed,
// longer than 128 bytes, overflowing, or repeated with differing values is
// skipped. remaining and reset are never negative.
func quota(h http.Header, now time.Time) (remaining int64, reset time.Duration, source string, ok bool) {
	if vals := h[hdrRateLimit]; len(vals) > 0 {
		if rl, valid := scanRateLimit(vals); valid && rl.minR >= 0 && rl.minRT >= 0 && rl.minRT <= maxWholeSeconds {
			return rl.minR, time.Duration(rl.minRT) * time.Second, "RateLimit", true
		}
	}
	if r, d, valid := quotaPair(h, hdrRateLimitRemaining, hdrRateLimitReset, now, parseReset); valid {
		return r, d, "RateLimit-Remaining", true
	}
	if r, d, valid := quotaPair(h, hdrXRemaining, hdrXReset, now, parseReset); valid {
		return r, d, "X-RateLimit-Remaining", true
	}
	if r, d, valid := quotaPair(h, hdrRemainingRequests, hdrResetRequests, now, parseDurationReset); valid {
		return r, d, "x-ratelimit-remaining-requests", true
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

// parseReset parses a *-Reset value: seconds (decimals rounded up), or, above
// 1e9, a Unix time in seconds.
func parseReset(s string, now time.Time) (time.Duration, bool) {
	n, ok := parseDecimalCeil(s)
	if !ok {
		return 0, false
	}
	if n <= unixResetAbove {
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

// isDecimal reports whether s is made only of digits and dots.
func isDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) && s[i] != '.' {
			return false
		}
	}
	return true
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

// HTTP-date (RFC 9110 §5.6.7).

var (
	shortDayNames = [...]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	longDayNames  = [...]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	monthNames    = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// parseHTTPDate parses an HTTP-date in any of its three forms.
func parseHTTPDate(s string, now time.Time) (time.Time, bool) {
	switch {
	case len(s) == len("Sun, 06 Nov 1994 08:49:37 GMT") && s[3] == ',':
		return parseIMFFixdate(s)
	case len(s) == len("Sun Nov  6 08:49:37 1994") && s[3] == ' ':
		return parseAsctime(s)
	}
	return parseRFC850(s, now)
}

// parseIMFFixdate parses "Sun, 06 Nov 1994 08:49:37 GMT".
func parseIMFFixdate(s string) (time.Time, bool) {
	if !isName(s[0:3], shortDayNames[:]) || s[4] != ' ' || s[7] != ' ' ||
		s[11] != ' ' || s[16] != ' ' || s[25] != ' ' || !equalFoldASCII(s[26:], "GMT") {
		return time.Time{}, false
	}
	day, ok1 := twoDigits(s[5:7])
	mon, ok2 := monthName(s[8:11])
	year, ok3 := fourDigits(s[12:16])
	hh, mm, ss, ok4 := clock(s[17:25])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return time.Time{}, false
	}
	return date(year, mon, day, hh, mm, ss)
}

// parseAsctime parses "Sun Nov  6 08:49:37 1994" (the day is 2DIGIT or
// SP DIGIT).
func parseAsctime(s string) (time.Time, bool) {
	if !isName(s[0:3], shortDayNames[:]) || s[7] != ' ' || s[10] != ' ' || s[19] != ' ' {
		return time.Time{}, false
	}
	mon, ok1 := monthName(s[4:7])
	var day int
	ok2 := false
	if s[8] == ' ' {
		if isDigit(s[9]) {
			day, ok2 = int(s[9]-'0'), true
		}
	} else {
		day, ok2 = twoDigits(s[8:10])
	}
	hh, mm, ss, ok3 := clock(s[11:19])
	year, ok4 := fourDigits(s[20:24])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return time.Time{}, false
	}
	return date(year, mon, day, hh, mm, ss)
}

// parseRFC850 parses "Sunday, 06-Nov-94 08:49:37 GMT". The two-digit year
// is the one within 50 years of now: RFC 9110 reads a date that appears to
// be more than 50 years in the future as the most recent past year with
// those digits.
func parseRFC850(s string, now time.Time) (time.Time, bool) {
	comma := -1
	for i := 0; i < len(s) && i <= len("Wednesday"); i++ {
		if s[i] == ',' {
			comma = i
			break
		}
	}
	if comma < 0 || !isName(s[:comma], longDayNames[:]) {
		return time.Time{}, false
	}
	r := s[comma+1:] // " 06-Nov-94 08:49:37 GMT"
	if len(r) != len(" 06-Nov-94 08:49:37 GMT") || r[0] != ' ' || r[3] != '-' || r[7] != '-' ||
		r[10] != ' ' || r[19] != ' ' || !equalFoldASCII(r[20:], "GMT") {
		return time.Time{}, false
	}
	day, ok1 := twoDigits(r[1:3])
	mon, ok2 := monthName(r[4:7])
	yy, ok3 := twoDigits(r[8:10])
	hh, mm, ss, ok4 := clock(r[11:19])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return time.Time{}, false
	}
	return date(rfc850Year(yy, mon, day, hh, mm, ss, now), mon, day, hh, mm, ss)
}

// rfc850Year returns the year ending in yy whose date lies in
// (now - 50 years, now + 50 years].
func rfc850Year(yy int, mon time.Month, day, hh, mm, ss int, now time.Time) int {
	n := now.UTC()
	y := n.Year() - (n.Year()%100+100)%100 + yy
	t := time.Date(y, mon, day, hh, mm, ss, 0, time.UTC)
	switch {
	case t.After(n.AddDate(50, 0, 0)):
		y -= 100
	case !t.After(n.AddDate(-50, 0, 0)):
		y += 100
	}
	return y
}

// date builds a UTC time from fields, rejecting impossible ones (31 Nov,
// 29 Feb of a common year, 24:00). Second 60, a leap second, is accepted and
// becomes the next minute's first.
func date(year int, mon time.Month, day, hh, mm, ss int) (time.Time, bool) {
	if day < 1 || day > daysIn(mon, year) || hh > 23 || mm > 59 || ss > 60 {
		return time.Time{}, false
	}
	return time.Date(year, mon, day, hh, mm, ss, 0, time.UTC), true
}

func daysIn(mon time.Month, year int) int {
	switch mon {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// clock parses "08:49:37".
func clock(s string) (hh, mm, ss int, ok bool) {
	if s[2] != ':' || s[5] != ':' {
		return 0, 0, 0, false
	}
	hh, ok1 := twoDigits(s[0:2])
	mm, ok2 := twoDigits(s[3:5])
	ss, ok3 := twoDigits(s[6:8])
	return hh, mm, ss, ok1 && ok2 && ok3
}

func twoDigits(s string) (int, bool) {
	if !isDigit(s[0]) || !isDigit(s[1]) {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

func fourDigits(s string) (int, bool) {
	hi, ok1 := twoDigits(s[0:2])
	lo, ok2 := twoDigits(s[2:4])
	return hi*100 + lo, ok1 && ok2
}

func monthName(s string) (time.Month, bool) {
	for i, m := range monthNames {
		if equalFoldASCII(s, m) {
			return time.Month(i + 1), true
		}
	}
	return 0, false
}

func isName(s string, names []string) bool {
	for _, n := range names {
		if equalFoldASCII(s, n) {
			return true
		}
	}
	return false
}

// equalFoldASCII reports whether s equals the ASCII letters of name, ignoring
// case.
func equalFoldASCII(s, name string) bool {
	if len(s) != len(name) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 != name[i]|0x20 || !isAlpha(s[i]) {
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
	zeroT int64 // largest t of an item with r=0; -1: none
	minR  int64 // smallest r; -1: no item
	minRT int64 // t of that item, the largest on a tie; -1: it has none
}

// scanRateLimit parses the field lines of RateLimit as one List (RFC 9651
// §4.2 joins them). ok is false when the field is malformed as a whole: bad
// syntax, an inner list, a line longer than maxHintLen, or an item whose r
// is missing or whose r or t is not a non-negative Integer. Empty lines add
// nothing.
func scanRateLimit(lines []string) (rl rateLimit, ok bool) {
	rl = rateLimit{zeroT: -1, minR: -1, minRT: -1}
	for _, line := range lines {
		if len(line) > maxHintLen {
			return rl, false
		}
		p := sfParser{s: trimOWS(line)}
		for !p.done() {
			r, t, ok := p.serviceLimit()
			if !ok {
				return rl, false
			}
			if r == 0 && t > rl.zeroT {
				rl.zeroT = t
			}
			if rl.minR < 0 || r < rl.minR || r == rl.minR && t > rl.minRT {
				rl.minR, rl.minRT = r, t
			}
			p.skipOWS()
			if p.done() {
				break
			}
			if p.s[p.i] != ',' {
				return rl, false
			}
			p.i++
			p.skipOWS()
			if p.done() {
				return rl, false // trailing comma
			}
		}
	}
	return rl, true
}

// sfParser walks a Structured Field value without allocating.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// serviceLimit parses one Item with its Parameters and returns its r and t
// (t is -1 when absent).
func (p *sfParser) serviceLimit() (r, t int64, ok bool) {
	if p.done() || p.s[p.i] == '(' {
		return 0, 0, false // inner lists are no service limit
	}
	if _, _, ok := p.bareItem(); !ok {
		return 0, 0, false
	}
	r, t = -1, -1
	rInt, tSet, tInt := false, false, false
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		for p.i < len(p.s) && p.s[p.i] == ' ' {
			p.i++
		}
		key, ok := p.key()
		if !ok {
			return 0, 0, false
		}
		isInt, n := false, int64(0) // a bare key is Boolean true
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if isInt, n, ok = p.bareItem(); !ok {
				return 0, 0, false
			}
		}
		switch key { // a repeated key overrides the earlier one
		case "r":
			r, rInt = n, isInt
		case "t":
			t, tSet, tInt = n, true, isInt
		}
	}
	if !rInt || r < 0 || tSet && (!tInt || t < 0) {
		return 0, 0, false
	}
	if !tSet {
		t = -1
	}
	return r, t, true
}

// key parses a parameter key: ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" /
// "-" / "." / "*" ).
func (p *sfParser) key() (string, bool) {
	start := p.i
	if p.done() || !(isLower(p.s[p.i]) || p.s[p.i] == '*') {
		return "", false
	}
	for p.i++; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' && c != '.' && c != '*' {
			break
		}
	}
	return p.s[start:p.i], true
}

// bareItem parses any bare item; isInt and n tell an Integer and its value.
func (p *sfParser) bareItem() (isInt bool, n int64, ok bool) {
	if p.done() {
		return false, 0, false
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return false, 0, p.str()
	case c == '*' || isAlpha(c):
		p.token()
		return false, 0, true
	case c == ':':
		return false, 0, p.byteSeq()
	case c == '?':
		p.i++
		if p.done() || p.s[p.i] != '0' && p.s[p.i] != '1' {
			return false, 0, false
		}
		p.i++
		return false, 0, true
	case c == '@': // Date: an Integer of seconds
		p.i++
		if p.done() || p.s[p.i] != '-' && !isDigit(p.s[p.i]) {
			return false, 0, false
		}
		isInt, _, ok := p.number()
		return false, 0, ok && isInt
	case c == '%':
		return false, 0, p.displayString()
	}
	return false, 0, false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fraction digits).
func (p *sfParser) number() (isInt bool, n int64, ok bool) {
	neg := false
	if p.s[p.i] == '-' {
		neg = true
		p.i++
	}
	start, dot := p.i, -1
	if p.done() || !isDigit(p.s[p.i]) {
		return false, 0, false
	}
scan:
	for ; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		switch {
		case isDigit(c):
			if dot < 0 {
				n = n*10 + int64(c-'0')
			}
		case c == '.' && dot < 0:
			if p.i-start > 12 {
				return false, 0, false
			}
			dot = p.i
		default:
			break scan
		}
		if dot < 0 && p.i+1-start > 15 || p.i+1-start > 16 {
			return false, 0, false
		}
	}
	if dot < 0 {
		if neg {
			n = -n
		}
		return true, n, true
	}
	if frac := p.i - dot - 1; frac < 1 || frac > 3 {
		return false, 0, false
	}
	return false, 0, true
}

// str parses a String: printable ASCII, with \" and \\ escapes.
func (p *sfParser) str() bool {
	for p.i++; p.i < len(p.s); {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.done() || p.s[p.i] != '"' && p.s[p.i] != '\\' {
				return false
			}
			p.i++
		case c == '"':
			return true
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false
}

// token parses the rest of a Token once its first character is known good.
func (p *sfParser) token() {
	for p.i++; p.i < len(p.s) && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/'); p.i++ {
	}
}

// byteSeq parses a Byte Sequence: base64 characters between colons.
func (p *sfParser) byteSeq() bool {
	for p.i++; p.i < len(p.s); {
		c := p.s[p.i]
		p.i++
		if c == ':' {
			return true
		}
		if !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return false
}

// displayString parses a Display String: %" then printable ASCII with
// lowercase %xx escapes that decode to valid UTF-8, then ".
func (p *sfParser) displayString() bool {
	p.i++
	if p.done() || p.s[p.i] != '"' {
		return false
	}
	var buf [maxHintLen]byte
	n := 0
	for p.i++; p.i < len(p.s); {
		c := p.s[p.i]
		p.i++
		switch {
		case c < 0x20 || c > 0x7e:
			return false
		case c == '"':
			return utf8.Valid(buf[:n])
		case c == '%':
			if p.i+2 > len(p.s) {
				return false
			}
			hi, ok1 := lowerHex(p.s[p.i])
			lo, ok2 := lowerHex(p.s[p.i+1])
			if !ok1 || !ok2 {
				return false
			}
			p.i += 2
			c = hi<<4 | lo
		}
		if n == len(buf) {
			return false
		}
		buf[n] = c
		n++
	}
	return false
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }

func lowerHex(c byte) (byte, bool) {
	switch {
	case isDigit(c):
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// isTchar reports whether c is an RFC 9110 token character.
func isTchar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
