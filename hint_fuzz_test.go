package heed

import (
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Seeds beside the committed corpus in testdata/fuzz.
var retryAfterSeeds = []string{
	"0", "120", " 5\t", "2.0", "1.2", "9223372036", "9223372037",
	"99999999999999999999", "10000000000000000000", "1e100", "-0", "+5", "5 5", "5, 5", ".5", "1.",
	"Sun, 29 Nov 2026 12:00:45 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
	"Thu, 01 Jan 1970 00:00:00 GMT", "Sun, 29 Nov 2026 12:00:60 GMT", "Mon, 29 Feb 2027 12:00:00 GMT",
	"Sunday, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-69 08:49:37 GMT", "Friday, 31-Dec-76 08:49:37 GMT",
	"Sun Nov  6 08:49:37 1994", "Sun Nov 29 12:00:45 2026",
	strings.Repeat(" ", 127) + "5", strings.Repeat("9", 129),
}

// isDelaySeconds reports whether s is 1*DIGIT [ "." 1*DIGIT ], the numeric
// forms ParseRetryAfter accepts.
func isDelaySeconds(s string) bool {
	digits, dot, frac := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9' && !dot:
			digits++
		case '0' <= c && c <= '9':
			frac++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0 && (!dot || frac > 0)
}

// ceilNanos returns a delay-seconds value rounded up to whole seconds, in
// nanoseconds, computed exactly.
func ceilNanos(s string) *big.Int {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("not a number: " + s)
	}
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Mul(q, big.NewInt(int64(time.Second)))
}

// FuzzParseRetryAfter checks that ParseRetryAfter never panics, never returns
// a negative wait, rejects anything over 128 bytes, returns exactly the
// rounded-up delay-seconds a numeric value says (checked with math/big), and
// agrees with net/http on the dates both accept.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range retryAfterSeeds {
		f.Add(s)
	}
	f.Add(strings.Repeat("9", 1<<16))
	f.Fuzz(func(t *testing.T, value string) {
		d, ok := ParseRetryAfter(value, raNow)
		if d < 0 {
			t.Fatalf("%q: negative wait %v", value, d)
		}
		if !ok && d != 0 {
			t.Fatalf("%q: invalid but wait %v", value, d)
		}
		if len(value) > maxHintLen {
			if ok {
				t.Fatalf("accepted a %d-byte value", len(value))
			}
			return
		}
		// Padding past the bound makes any value invalid.
		if _, ok := ParseRetryAfter(value+strings.Repeat(" ", maxHintLen+1-len(value)), raNow); ok {
			t.Fatalf("%q padded past %d bytes accepted", value, maxHintLen)
		}

		s := strings.Trim(value, " \t")
		if isDelaySeconds(s) {
			// The wait is exactly what the header says, rounded up to a
			// whole second: never more, never less; or no hint when that
			// does not fit in a Duration.
			want := ceilNanos(s)
			if ok != want.IsInt64() {
				t.Fatalf("%q: ok=%v, but %v ns fits=%v", value, ok, want, want.IsInt64())
			}
			if ok && int64(d) != want.Int64() {
				t.Fatalf("%q: wait %v, header says %v ns", value, d, want)
			}
			return
		}
		if !ok {
			return
		}
		// Any other accepted value is a date. Where the grammars overlap,
		// net/http agrees on it (it is laxer in places, and reads RFC 850
		// two-digit years 69-76 differently, so those are left out).
		imf := len(s) == len("Sun, 06 Nov 1994 08:49:37 GMT") && s[3] == ','
		asctime := len(s) == len("Sun Nov  6 08:49:37 1994") && s[3] == ' '
		if imf || asctime {
			if tm, err := http.ParseTime(s); err == nil {
				if want := max(tm.Sub(raNow), 0); d != want {
					t.Fatalf("%q: wait %v, net/http reads %v", value, d, want)
				}
			}
		}
	})
}

// FuzzHint checks that Hint (and quota) never panic or return a negative
// wait, that a valid Retry-After or retry-after-ms is never beaten by a
// shorter wait or by a RateLimit source, and that X-RateLimit-Reset is used
// only when X-RateLimit-Remaining is 0.
func FuzzHint(f *testing.F) {
	// ra, ms, rl, xrem, xreset: values of Retry-After, retry-after-ms,
	// RateLimit, X-RateLimit-Remaining and X-RateLimit-Reset. "" leaves a
	// field out; "\n" separates repeated fields.
	f.Add("5", "", "", "", "")
	f.Add("2", "2500", "", "", "")
	f.Add("5\n6", "", `"default";r=0;t=30`, "", "")
	f.Add("soon", "1.5", `"a";r=0;t=10, "b";r=0;t=40`, "0", "1795000000")
	f.Add("", "", `"default";r=0;t=30,`, "0", "60")
	f.Add("99999999999999999999", "9223372036855", `"a";r=0;t=999999999999999`, "0", "9223372036854775807")
	f.Add("Sun, 29 Nov 2026 12:00:45 GMT", "", "", "", "")
	f.Add("", "", "", "1", "60")
	f.Add(strings.Repeat("9", 1<<16), "", strings.Repeat(`"a";r=0;t=3,`, 1<<12), "", "")
	f.Fuzz(func(t *testing.T, ra, ms, rl, xrem, xreset string) {
		h := http.Header{}
		add := func(key, v string) {
			if v != "" {
				for _, line := range strings.Split(v, "\n") {
					h.Add(key, line)
				}
			}
		}
		add("Retry-After", ra)
		add("Retry-After-Ms", ms)
		add("RateLimit", rl)
		add("X-RateLimit-Remaining", xrem)
		add("X-RateLimit-Reset", xreset)

		d, source, ok := Hint(&http.Response{StatusCode: http.StatusTooManyRequests, Header: h}, raNow)
		if d < 0 {
			t.Fatalf("negative wait %v from %s", d, source)
		}
		if ok != (source != "") || !ok && d != 0 {
			t.Fatalf("ok=%v source=%q wait=%v", ok, source, d)
		}
		family := source == "Retry-After" || source == "retry-after-ms" || source == "x-ms-retry-after-ms"
		switch source {
		case "", "Retry-After", "retry-after-ms", "x-ms-retry-after-ms", "RateLimit", "RateLimit-Reset", "X-RateLimit-Reset":
		default:
			t.Fatalf("unknown source %q", source)
		}

		// A valid single Retry-After is always honoured, by itself or by a
		// longer wait of its family.
		if !strings.Contains(ra, "\n") && ra != "" {
			if raD, raOK := ParseRetryAfter(ra, raNow); raOK {
				if !family || d < raD {
					t.Fatalf("Retry-After %q (%v) lost to %s %v", ra, raD, source, d)
				}
				if source == "Retry-After" && d != raD {
					t.Fatalf("Retry-After %q: wait %v, want %v", ra, d, raD)
				}
			}
		}
		// retry-after-ms digits: exact, never more than the header says.
		if msv := strings.Trim(ms, " \t"); !strings.Contains(ms, "\n") && len(ms) <= maxHintLen && msv != "" && isDelaySeconds(msv) && !strings.Contains(msv, ".") {
			n, _ := new(big.Int).SetString(msv, 10)
			n.Mul(n, big.NewInt(int64(time.Millisecond)))
			if n.IsInt64() && (!family || int64(d) < n.Int64()) {
				t.Fatalf("retry-after-ms %q lost to %s %v", ms, source, d)
			}
			if source == "retry-after-ms" && int64(d) != n.Int64() {
				t.Fatalf("retry-after-ms %q: wait %v", ms, d)
			}
		}
		if source == "X-RateLimit-Reset" {
			first, _, _ := strings.Cut(xrem, "\n")
			if n, valid := parseDigits(strings.Trim(first, " \t")); !valid || n != 0 {
				t.Fatalf("X-RateLimit-Reset used with X-RateLimit-Remaining %q", xrem)
			}
			first, _, _ = strings.Cut(xreset, "\n")
			// A count of seconds when no more than half of now's Unix time
			// (else a Unix time): exact.
			if v := strings.Trim(first, " \t"); isDelaySeconds(v) && !strings.Contains(v, ".") && len(v) < 10 {
				if n, _ := parseDigits(v); n <= raNow.Unix()/2 && int64(d) != ceilNanos(v).Int64() {
					t.Fatalf("X-RateLimit-Reset %q: wait %v", xreset, d)
				}
			}
		}

		remaining, reset, qsource, qok := quota(h, raNow)
		if remaining < 0 || reset < 0 || qok != (qsource != "") || !qok && (remaining != 0 || reset != 0) {
			t.Fatalf("quota: %d %v %q %v", remaining, reset, qsource, qok)
		}
	})
}

// FuzzResetSpellings checks the other spellings of a reset, Discord's
// X-RateLimit-Reset-After and X's x-rate-limit-reset: Hint never panics or
// returns a negative wait, reads them only when their remaining count is
// 0, and a Reset-After it reads waits at least what its value says.
// The seed corpus is testdata/fuzz/FuzzResetSpellings.
func FuzzResetSpellings(f *testing.F) {
	f.Add("0", "64.57", "0", "1715679167")
	f.Add("0", "0.0001", "", "")
	f.Add("1", "2", "3", "60")
	f.Add("0", "1e3", "0", "99999999999999999999")
	f.Fuzz(func(t *testing.T, xrem, resetAfter, dashRem, dashReset string) {
		h := http.Header{}
		for k, v := range map[string]string{"X-RateLimit-Remaining": xrem, "X-RateLimit-Reset-After": resetAfter, "X-Rate-Limit-Remaining": dashRem, "X-Rate-Limit-Reset": dashReset} {
			if v != "" {
				h.Set(k, v)
			}
		}
		d, source, ok := Hint(&http.Response{StatusCode: http.StatusTooManyRequests, Header: h}, raNow)
		if d < 0 || ok != (source != "") {
			t.Fatalf("wait %v, source %q, ok %v", d, source, ok)
		}
		switch source {
		case "X-RateLimit-Reset-After":
			if trimOWS(xrem) != "0" && strings.TrimLeft(trimOWS(xrem), "0") != "" {
				t.Fatalf("Reset-After read with X-RateLimit-Remaining %q", xrem)
			}
			if s, err := strconv.ParseFloat(trimOWS(resetAfter), 64); err != nil || d < time.Duration(s*float64(time.Second))-time.Microsecond {
				t.Fatalf("Reset-After %q read as %v", resetAfter, d)
			}
		case "x-rate-limit-reset":
			if strings.TrimLeft(trimOWS(dashRem), "0") != "" || trimOWS(dashRem) == "" {
				t.Fatalf("x-rate-limit-reset read with x-rate-limit-remaining %q", dashRem)
			}
		case "":
		default:
			t.Fatalf("unknown source %q", source)
		}
		if d, ok := parseSecondsCeil(resetAfter); ok && d < 0 {
			t.Fatalf("%q: negative %v", resetAfter, d)
		}
	})
}
