package heed

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raNow is the fixed clock of these tests: Sunday 29 November 2026, noon UTC.
var raNow = time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)

// raUntil is the wait from raNow until the given UTC time.
func raUntil(year int, mon time.Month, day, hh, mm, ss int) time.Duration {
	return time.Date(year, mon, day, hh, mm, ss, 0, time.UTC).Sub(raNow)
}

// raHeader builds a header from name, value pairs with Header.Add, so that
// keys are canonical and repeated names make repeated fields.
func raHeader(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

type raCase struct {
	name  string
	value string
	want  time.Duration
	ok    bool
}

func runRetryAfterCases(t *testing.T, now time.Time, cases []raCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := ParseRetryAfter(c.value, now)
			require.Equal(t, c.ok, ok, "value %q", c.value)
			assert.Equal(t, c.want, d, "value %q", c.value)
			assert.GreaterOrEqual(t, d, time.Duration(0))
		})
	}
}

func TestParseRetryAfterDelaySeconds(t *testing.T) {
	runRetryAfterCases(t, raNow, []raCase{
		{"zero", "0", 0, true},
		{"plain", "120", 120 * time.Second, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"surrounding OWS", " \t5\t ", 5 * time.Second, true},
		{"largest representable", "9223372036", 9223372036 * time.Second, true},
		{"one past representable", "9223372037", 0, false},
		{"overflows int64 ns", "10000000000000000000", 0, false},
		{"overflows uint64", "99999999999999999999", 0, false},
		{"many leading zeros", strings.Repeat("0", 100) + "5", 5 * time.Second, true},
		{"empty", "", 0, false},
		{"only OWS", " \t ", 0, false},
		{"minus zero", "-0", 0, false},
		{"negative", "-1", 0, false},
		{"plus sign", "+5", 0, false},
		{"exponent", "1e100", 0, false},
		{"capital exponent", "1E3", 0, false},
		{"inner space", "5 5", 0, false},
		{"comma list", "5, 5", 0, false},
		{"comma no space", "5,5", 0, false},
		{"unit", "10s", 0, false},
		{"hex", "0x10", 0, false},
		{"fullwidth digits", "５", 0, false},
		{"arabic-indic digits", "١٢", 0, false},
		{"NUL after digits", "5\x00", 0, false},
		{"inner tab", "5\t5", 0, false},
		{"newline after", "5\n", 0, false},
		{"word", "soon", 0, false},
		{"Inf", "Inf", 0, false},
		{"NaN", "NaN", 0, false},
	})
}

func TestParseRetryAfterDecimalSeconds(t *testing.T) {
	runRetryAfterCases(t, raNow, []raCase{
		{"shopify 2.0", "2.0", 2 * time.Second, true},
		{"1.2 rounds up", "1.2", 2 * time.Second, true},
		{"1.5 rounds up", "1.5", 2 * time.Second, true},
		{"tiny fraction rounds up", "0.001", time.Second, true},
		{"zero fraction", "0.0", 0, true},
		{"long zero fraction", "3.000000", 3 * time.Second, true},
		{"long fraction", "3." + strings.Repeat("0", 60) + "1", 4 * time.Second, true},
		{"rounds up to the largest", "9223372035.1", 9223372036 * time.Second, true},
		{"rounds up past the largest", "9223372036.5", 0, false},
		{"no fraction digits", "1.", 0, false},
		{"no integer digits", ".5", 0, false},
		{"two dots", "1..2", 0, false},
		{"two fractions", "1.2.3", 0, false},
		{"signed decimal", "-1.5", 0, false},
		{"plus decimal", "+1.5", 0, false},
		{"decimal exponent", "1.5e3", 0, false},
		{"comma decimal", "1,5", 0, false},
		{"space in decimal", "1. 5", 0, false},
	})
}

func TestParseRetryAfterOversized(t *testing.T) {
	runRetryAfterCases(t, raNow, []raCase{
		{"128 bytes", strings.Repeat(" ", 127) + "5", 5 * time.Second, true},
		{"129 bytes", strings.Repeat(" ", 128) + "5", 0, false},
		{"129 digits", strings.Repeat("0", 128) + "5", 0, false},
		{"1 MiB of digits", strings.Repeat("9", 1<<20), 0, false},
		{"1 MiB of spaces then a delay", strings.Repeat(" ", 1<<20) + "5", 0, false},
	})

	huge := strings.Repeat("1", 1<<20)
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := ParseRetryAfter(huge, raNow); ok {
			t.Fatal("1 MiB value accepted")
		}
	})
	assert.Zero(t, allocs)
}

func TestParseRetryAfterNowIsTheReference(t *testing.T) {
	v := "Sun, 29 Nov 2026 12:01:00 GMT"
	d, ok := ParseRetryAfter(v, raNow.Add(30*time.Second+500*time.Millisecond))
	require.True(t, ok)
	assert.Equal(t, 29*time.Second+500*time.Millisecond, d)

	// A now in another zone, with a monotonic reading, is the same instant.
	local := raNow.In(time.FixedZone("UTC+9", 9*3600))
	d, ok = ParseRetryAfter(v, local)
	require.True(t, ok)
	assert.Equal(t, time.Minute, d)
	d, ok = ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", time.Now())
	require.True(t, ok)
	assert.Zero(t, d, "a past date is a wait of 0, never negative")
}

type hintCase struct {
	name   string
	header http.Header
	want   time.Duration
	source string
	ok     bool
}

func runHintCases(t *testing.T, cases []hintCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: c.header}
			d, source, ok := Hint(resp, raNow)
			require.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, d)
			assert.Equal(t, c.source, source)
		})
	}
}

func TestHintNoResponse(t *testing.T) {
	d, source, ok := Hint(nil, raNow)
	assert.False(t, ok)
	assert.Zero(t, d)
	assert.Empty(t, source)

	d, source, ok = Hint(&http.Response{StatusCode: 429}, raNow)
	assert.False(t, ok, "nil Header")
	assert.Zero(t, d)
	assert.Empty(t, source)
}

func TestHintRetryAfterFamily(t *testing.T) {
	runHintCases(t, []hintCase{
		{"none", raHeader("Content-Type", "application/json"), 0, "", false},
		{"Retry-After seconds", raHeader("Retry-After", "5"), 5 * time.Second, "Retry-After", true},
		{"Retry-After decimal", raHeader("Retry-After", "2.0"), 2 * time.Second, "Retry-After", true},
		{"Retry-After date", raHeader("Retry-After", "Sun, 29 Nov 2026 12:00:45 GMT"), 45 * time.Second, "Retry-After", true},
		{"Retry-After past date", raHeader("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"), 0, "Retry-After", true},
		{"Retry-After zero", raHeader("Retry-After", "0"), 0, "Retry-After", true},
		{"retry-after-ms", raHeader("retry-after-ms", "1500"), 1500 * time.Millisecond, "retry-after-ms", true},
		{"x-ms-retry-after-ms", raHeader("x-ms-retry-after-ms", "250"), 250 * time.Millisecond, "x-ms-retry-after-ms", true},
		{"ms largest", raHeader("Retry-After", "2", "retry-after-ms", "2500"), 2500 * time.Millisecond, "retry-after-ms", true},
		{"x-ms largest", raHeader("Retry-After", "2", "retry-after-ms", "2500", "x-ms-retry-after-ms", "3000"), 3 * time.Second, "x-ms-retry-after-ms", true},
		{"Retry-After largest", raHeader("Retry-After", "10", "retry-after-ms", "2500", "x-ms-retry-after-ms", "3000"), 10 * time.Second, "Retry-After", true},
		{"date largest", raHeader("Retry-After", "Sun, 29 Nov 2026 12:01:00 GMT", "retry-after-ms", "2500"), time.Minute, "Retry-After", true},
		{"tie goes to Retry-After", raHeader("Retry-After", "2", "retry-after-ms", "2000", "x-ms-retry-after-ms", "2000"), 2 * time.Second, "Retry-After", true},
		{"tie between ms goes to retry-after-ms", raHeader("retry-after-ms", "2000", "x-ms-retry-after-ms", "2000"), 2 * time.Second, "retry-after-ms", true},
		{"invalid Retry-After, valid ms", raHeader("Retry-After", "soon", "retry-after-ms", "1500"), 1500 * time.Millisecond, "retry-after-ms", true},
		{"valid Retry-After, invalid ms", raHeader("Retry-After", "1", "retry-after-ms", "1e9"), time.Second, "Retry-After", true},
		{"ms decimal invalid", raHeader("retry-after-ms", "1.5"), 0, "", false},
		{"ms negative invalid", raHeader("retry-after-ms", "-5"), 0, "", false},
		{"ms plus invalid", raHeader("retry-after-ms", "+5"), 0, "", false},
		{"ms largest representable", raHeader("retry-after-ms", "9223372036854"), 9223372036854 * time.Millisecond, "retry-after-ms", true},
		{"ms overflow", raHeader("retry-after-ms", "9223372036855"), 0, "", false},
		{"ms huge", raHeader("x-ms-retry-after-ms", "99999999999999999999"), 0, "", false},
		{"ms with OWS", raHeader("retry-after-ms", " 20 "), 20 * time.Millisecond, "retry-after-ms", true},
		{"Retry-After overflow", raHeader("Retry-After", "99999999999999999999"), 0, "", false},
		{"Retry-After exponent", raHeader("Retry-After", "1e100"), 0, "", false},
		{"Retry-After minus zero", raHeader("Retry-After", "-0"), 0, "", false},
		{"Retry-After plus", raHeader("Retry-After", "+5"), 0, "", false},
		{"Retry-After inner space", raHeader("Retry-After", "5 5"), 0, "", false},
		{"Retry-After year 9999", raHeader("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"), 0, "", false},
		{"Retry-After pre-1970", raHeader("Retry-After", "Thu, 01 Jan 1931 00:00:00 GMT"), 0, "Retry-After", true},
		{"Retry-After oversized", raHeader("Retry-After", strings.Repeat(" ", 200)+"5"), 0, "", false},
		{"ms oversized", raHeader("retry-after-ms", strings.Repeat("0", 200)+"5"), 0, "", false},
		{"Retry-After 1 MiB", raHeader("Retry-After", strings.Repeat("9", 1<<20)), 0, "", false},
	})
}

func TestHintRepeatedFields(t *testing.T) {
	runHintCases(t, []hintCase{
		{"identical repeats", raHeader("Retry-After", "5", "Retry-After", "5"), 5 * time.Second, "Retry-After", true},
		{"identical up to OWS", raHeader("Retry-After", "5", "Retry-After", " 5 "), 5 * time.Second, "Retry-After", true},
		{"conflicting Retry-After", raHeader("Retry-After", "5", "Retry-After", "6"), 0, "", false},
		{"conflicting Retry-After, valid ms", raHeader("Retry-After", "50", "Retry-After", "60", "retry-after-ms", "100"), 100 * time.Millisecond, "retry-after-ms", true},
		{"conflicting ms, valid Retry-After", raHeader("retry-after-ms", "5000", "retry-after-ms", "6000", "Retry-After", "1"), time.Second, "Retry-After", true},
		{"conflicting valid and invalid", raHeader("Retry-After", "5", "Retry-After", "soon"), 0, "", false},
		{"comma-joined duplicate", raHeader("Retry-After", "5, 5"), 0, "", false},
		{"repeated date", raHeader("Retry-After", "Sun, 29 Nov 2026 12:00:45 GMT", "Retry-After", "Sun, 29 Nov 2026 12:00:45 GMT"), 45 * time.Second, "Retry-After", true},
		{"conflicting Retry-After falls through to RateLimit", raHeader("Retry-After", "5", "Retry-After", "6", "RateLimit", `"d";r=0;t=9`), 9 * time.Second, "RateLimit", true},
		{"conflicting RateLimit-Remaining", raHeader("RateLimit-Remaining", "0", "RateLimit-Remaining", "3", "RateLimit-Reset", "9"), 0, "", false},
		{"conflicting RateLimit-Reset", raHeader("RateLimit-Reset", "8", "RateLimit-Reset", "9"), 0, "", false},
		{"conflicting X-RateLimit-Remaining", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "9"), 0, "", false},
		{"conflicting X-RateLimit-Reset", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "8", "X-RateLimit-Reset", "9"), 0, "", false},
	})
}

func TestHintHugeHeaderBlock(t *testing.T) {
	many := http.Header{}
	for i := range 10_000 {
		many.Add("X-Filler-"+strconv.Itoa(i), strings.Repeat("x", 64))
	}
	many.Add("Retry-After", "7")

	sameRA := http.Header{"Retry-After": make([]string, 10_000)}
	for i := range sameRA["Retry-After"] {
		sameRA["Retry-After"][i] = "7"
	}
	conflictRA := http.Header{"Retry-After": append(append([]string(nil), sameRA["Retry-After"]...), "8")}

	manyRL := http.Header{}
	for range 10_000 {
		manyRL.Add("RateLimit", `"burst";r=0;t=3, "daily";r=9;t=86400`)
	}
	manyRL.Add("RateLimit", `"slow";r=0;t=4`)

	runHintCases(t, []hintCase{
		{"10,000 other fields", many, 7 * time.Second, "Retry-After", true},
		{"10,000 identical Retry-After", sameRA, 7 * time.Second, "Retry-After", true},
		{"10,000 identical and one different", conflictRA, 0, "", false},
		{"10,001 RateLimit lines", manyRL, 4 * time.Second, "RateLimit", true},
	})

	allocs := testing.AllocsPerRun(10, func() {
		Hint(&http.Response{Header: many}, raNow)
		Hint(&http.Response{Header: conflictRA}, raNow)
		Hint(&http.Response{Header: manyRL}, raNow)
	})
	assert.Zero(t, allocs)
}

func TestHintRateLimitField(t *testing.T) {
	rl := func(v ...string) http.Header {
		h := http.Header{}
		for _, s := range v {
			h.Add("RateLimit", s)
		}
		return h
	}
	runHintCases(t, []hintCase{
		{"exhausted", rl(`"default";r=0;t=30`), 30 * time.Second, "RateLimit", true},
		{"not exhausted", rl(`"default";r=5;t=30`), 0, "", false},
		{"exhausted without t", rl(`"default";r=0`), 0, "", false},
		{"t zero", rl(`"default";r=0;t=0`), 0, "RateLimit", true},
		{"largest t of r=0 items", rl(`"a";r=0;t=10, "b";r=0;t=40, "c";r=1;t=99`), 40 * time.Second, "RateLimit", true},
		{"only the r=0 item", rl(`"a";r=0;t=10, "b";r=3;t=40`), 10 * time.Second, "RateLimit", true},
		{"split over lines", rl(`"a";r=0;t=10`, `"b";r=0;t=20`), 20 * time.Second, "RateLimit", true},
		{"token item", rl(`default;r=0;t=30`), 30 * time.Second, "RateLimit", true},
		{"partition key", rl(`"default";r=0;t=60;pk=:QXBwLTk5OQ==:`), time.Minute, "RateLimit", true},
		{"other parameters", rl(`"a";acme-x=?1;r=0;w=1.5;d=@1700000000;s="x";t=3;f`), 3 * time.Second, "RateLimit", true},
		{"OWS around members", rl("\"a\";r=1;t=1 ,\t\"b\";r=0;t=2"), 2 * time.Second, "RateLimit", true},
		{"space after semicolon", rl(`"a"; r=0; t=2`), 2 * time.Second, "RateLimit", true},
		{"later key overrides", rl(`"a";r=0;t=5;t=7`), 7 * time.Second, "RateLimit", true},
		{"later r overrides", rl(`"a";r=3;t=5;r=0`), 5 * time.Second, "RateLimit", true},
		{"display string item", rl(`%"f%c3%bc";r=0;t=3`), 3 * time.Second, "RateLimit", true},
		{"boolean item", rl(`?0;r=0;t=2`), 2 * time.Second, "RateLimit", true},
		{"escaped string item", rl(`"a\"b\\c";r=0;t=2`), 2 * time.Second, "RateLimit", true},
		{"15-digit t overflows", rl(`"a";r=0;t=999999999999999`), 0, "", false},
		{"10-digit t overflows", rl(`"a";r=0;t=9223372037`), 0, "", false},
		{"largest representable t", rl(`"a";r=0;t=9223372036`), 9223372036 * time.Second, "RateLimit", true},
		{"overflowing t is no hint, not a smaller one", rl(`"a";r=0;t=2, "b";r=0;t=9999999999`), 0, "", false},
		{"empty line adds nothing", rl(`"a";r=0;t=2`, ``), 2 * time.Second, "RateLimit", true},

		{"trailing comma", rl(`"default";r=0;t=30,`), 0, "", false},
		{"leading comma", rl(`,"default";r=0;t=30`), 0, "", false},
		{"empty member", rl(`"a";r=0;t=3,,"b";r=0;t=4`), 0, "", false},
		{"negative t", rl(`"default";r=0;t=-1`), 0, "", false},
		{"negative r", rl(`"default";r=-1;t=5`), 0, "", false},
		{"decimal t", rl(`"default";r=0;t=1.5`), 0, "", false},
		{"string t", rl(`"default";r=0;t="30"`), 0, "", false},
		{"boolean r", rl(`"default";r;t=30`), 0, "", false},
		{"missing r", rl(`"default";t=30`), 0, "", false},
		{"16-digit integer", rl(`"a";r=0;t=1234567890123456`), 0, "", false},
		{"inner list", rl(`("a" "b");r=0;t=30`), 0, "", false},
		{"uppercase key", rl(`"default";R=0;t=30`), 0, "", false},
		{"space before parameters", rl(`"default" ;r=0;t=30`), 0, "", false},
		{"unterminated string", rl(`"default;r=0;t=30`), 0, "", false},
		{"bad escape", rl(`"a\x";r=0;t=3`), 0, "", false},
		{"non-ASCII", rl(`"défaut";r=0;t=3`), 0, "", false},
		{"invalid UTF-8 display string", rl(`%"f%c3";r=0;t=3`), 0, "", false},
		{"uppercase hex display string", rl(`%"f%C3%BC";r=0;t=3`), 0, "", false},
		{"bad byte sequence", rl(`"a";r=0;t=3;pk=:ab*c:`), 0, "", false},
		{"decimal date", rl(`"a";r=0;t=3;d=@1.5`), 0, "", false},
		{"malformed item poisons the field", rl(`"a";r=0;t=30, "b";r=1;t=x`), 0, "", false},
		{"malformed line poisons the field", rl(`"a";r=0;t=30`, `"b";r=0;t=`), 0, "", false},
		{"oversized line", rl(`"a";r=0;t=30;x="` + strings.Repeat("y", 120) + `"`), 0, "", false},
		{"1 MiB line", rl(strings.Repeat(`"a";r=0;t=3,`, 1<<17)), 0, "", false},
		{"legacy style", rl(`limit=100, remaining=0, reset=30`), 0, "", false},
	})
}

func TestHintRateLimitReset(t *testing.T) {
	unix := func(d time.Duration) string { return strconv.FormatInt(raNow.Add(d).Unix(), 10) }
	runHintCases(t, []hintCase{
		{"reset alone", raHeader("RateLimit-Reset", "30"), 30 * time.Second, "RateLimit-Reset", true},
		{"remaining 0", raHeader("RateLimit-Remaining", "0", "RateLimit-Reset", "30"), 30 * time.Second, "RateLimit-Reset", true},
		{"remaining 00", raHeader("RateLimit-Remaining", "00", "RateLimit-Reset", "30"), 30 * time.Second, "RateLimit-Reset", true},
		{"remaining left", raHeader("RateLimit-Remaining", "5", "RateLimit-Reset", "30"), 0, "", false},
		{"remaining invalid", raHeader("RateLimit-Remaining", "none", "RateLimit-Reset", "30"), 0, "", false},
		{"remaining negative", raHeader("RateLimit-Remaining", "-1", "RateLimit-Reset", "30"), 0, "", false},
		{"decimal reset rounds up", raHeader("RateLimit-Reset", "2.5"), 3 * time.Second, "RateLimit-Reset", true},
		{"half of now's Unix time is seconds", raHeader("RateLimit-Reset", strconv.FormatInt(raNow.Unix()/2, 10)), time.Duration(raNow.Unix()/2) * time.Second, "RateLimit-Reset", true},
		{"above it is Unix time", raHeader("RateLimit-Reset", unix(90*time.Second)), 90 * time.Second, "RateLimit-Reset", true},
		{"past Unix time", raHeader("RateLimit-Reset", strconv.FormatInt(raNow.Unix()/2+1, 10)), 0, "RateLimit-Reset", true},
		{"fractional Unix time rounds up", raHeader("RateLimit-Reset", unix(90*time.Second)+".2"), 91 * time.Second, "RateLimit-Reset", true},
		{"overflowing Unix time", raHeader("RateLimit-Reset", "9223372036854775807"), 0, "", false},
		{"huge reset", raHeader("RateLimit-Reset", "99999999999999999999"), 0, "", false},
		{"negative reset", raHeader("RateLimit-Reset", "-30"), 0, "", false},
		{"date reset", raHeader("RateLimit-Reset", "Sun, 29 Nov 2026 12:00:45 GMT"), 0, "", false},
		{"oversized reset", raHeader("RateLimit-Reset", strings.Repeat("0", 129)), 0, "", false},
	})
}

func TestHintXRateLimitReset(t *testing.T) {
	unix := func(d time.Duration) string { return strconv.FormatInt(raNow.Add(d).Unix(), 10) }
	runHintCases(t, []hintCase{
		{"GitHub exhausted", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", unix(time.Hour)), time.Hour, "X-RateLimit-Reset", true},
		{"seconds", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "12"), 12 * time.Second, "X-RateLimit-Reset", true},
		{"past Unix time", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", unix(-time.Hour)), 0, "X-RateLimit-Reset", true},
		{"remaining absent", raHeader("X-RateLimit-Reset", "12"), 0, "", false},
		{"remaining left", raHeader("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "12"), 0, "", false},
		{"remaining invalid", raHeader("X-RateLimit-Remaining", "0.0", "X-RateLimit-Reset", "12"), 0, "", false},
		{"reset invalid", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "soon"), 0, "", false},
		{"reset overflows", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "99999999999999999999"), 0, "", false},
		{"Discord fractional Unix reset", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", unix(64*time.Second)+".123"), 65 * time.Second, "X-RateLimit-Reset", true},
		{"Discord Reset-After, longer", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", unix(64*time.Second), "X-RateLimit-Reset-After", "64.57"), 64570 * time.Millisecond, "X-RateLimit-Reset-After", true},
		{"Discord Reset-After alone", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "1.5"), 1500 * time.Millisecond, "X-RateLimit-Reset-After", true},
		{"Reset-After to the millisecond, rounded up", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "0.0001"), time.Millisecond, "X-RateLimit-Reset-After", true},
		{"Reset-After shorter: the reset wins", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "10", "X-RateLimit-Reset-After", "2"), 10 * time.Second, "X-RateLimit-Reset", true},
		{"Reset-After with requests left", raHeader("X-RateLimit-Remaining", "3", "X-RateLimit-Reset-After", "2"), 0, "", false},
		{"Reset-After invalid", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "-2"), 0, "", false},
		{"Reset-After with an exponent", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "1e3"), 0, "", false},
		{"Reset-After overflows", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "9223372037"), 0, "", false},
		{"Reset-After past a Duration by its decimals", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "9223372036.9"), 0, "", false},
		{"X (Twitter) x-rate-limit", raHeader("x-rate-limit-limit", "15", "x-rate-limit-remaining", "0", "x-rate-limit-reset", unix(15*time.Minute)), 15 * time.Minute, "x-rate-limit-reset", true},
		{"x-rate-limit with requests left", raHeader("x-rate-limit-remaining", "2", "x-rate-limit-reset", unix(time.Minute)), 0, "", false},
		{"x-rate-limit without a reset", raHeader("x-rate-limit-remaining", "0"), 0, "", false},
		{"X-RateLimit wins over x-rate-limit", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "5", "x-rate-limit-remaining", "0", "x-rate-limit-reset", "50"), 5 * time.Second, "X-RateLimit-Reset", true},
	})
}

func TestHintPrecedence(t *testing.T) {
	runHintCases(t, []hintCase{
		{"Retry-After beats a longer RateLimit", raHeader("Retry-After", "5", "RateLimit", `"d";r=0;t=30`), 5 * time.Second, "Retry-After", true},
		{"ms beats RateLimit", raHeader("retry-after-ms", "100", "RateLimit", `"d";r=0;t=30`), 100 * time.Millisecond, "retry-after-ms", true},
		{"x-ms beats *-Reset", raHeader("x-ms-retry-after-ms", "100", "RateLimit-Reset", "30", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "40"), 100 * time.Millisecond, "x-ms-retry-after-ms", true},
		{"Retry-After 0 still beats RateLimit", raHeader("Retry-After", "0", "RateLimit", `"d";r=0;t=30`), 0, "Retry-After", true},
		{"invalid Retry-After lets RateLimit in", raHeader("Retry-After", "-5", "RateLimit", `"d";r=0;t=30`), 30 * time.Second, "RateLimit", true},
		{"RateLimit beats RateLimit-Reset", raHeader("RateLimit", `"d";r=0;t=30`, "RateLimit-Reset", "40"), 30 * time.Second, "RateLimit", true},
		{"RateLimit without r=0 lets RateLimit-Reset in", raHeader("RateLimit", `"d";r=5;t=30`, "RateLimit-Reset", "40"), 40 * time.Second, "RateLimit-Reset", true},
		{"malformed RateLimit lets RateLimit-Reset in", raHeader("RateLimit", `"d";r=0;t=-30`, "RateLimit-Reset", "40"), 40 * time.Second, "RateLimit-Reset", true},
		{"RateLimit-Reset beats X-RateLimit-Reset", raHeader("RateLimit-Reset", "40", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "50"), 40 * time.Second, "RateLimit-Reset", true},
		{"invalid RateLimit-Reset lets X-RateLimit-Reset in", raHeader("RateLimit-Reset", "x", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "50"), 50 * time.Second, "X-RateLimit-Reset", true},
		{"RateLimit-Remaining left lets X-RateLimit-Reset in", raHeader("RateLimit-Remaining", "3", "RateLimit-Reset", "40", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "50"), 50 * time.Second, "X-RateLimit-Reset", true},
	})
}

func TestHintHeaderKeysAreCanonical(t *testing.T) {
	for key, name := range map[string]string{
		hdrRetryAfter:         "Retry-After",
		hdrRetryAfterMs:       "retry-after-ms",
		hdrMsRetryAfterMs:     "x-ms-retry-after-ms",
		hdrRateLimit:          "RateLimit",
		hdrRateLimitRemaining: "RateLimit-Remaining",
		hdrRateLimitReset:     "RateLimit-Reset",
		hdrXRemaining:         "X-RateLimit-Remaining",
		hdrXReset:             "X-RateLimit-Reset",
		hdrRemainingRequests:  "x-ratelimit-remaining-requests",
		hdrResetRequests:      "x-ratelimit-reset-requests",
	} {
		assert.Equal(t, http.CanonicalHeaderKey(name), key)
	}
}

func TestHintDoesNotAllocate(t *testing.T) {
	plain := &http.Response{StatusCode: http.StatusOK, Header: raHeader(
		"Content-Type", "application/json",
		"Content-Length", "1234",
		"Date", "Sun, 29 Nov 2026 12:00:00 GMT",
		"Cache-Control", "no-store",
		"Server", "nginx",
	)}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, _, ok := Hint(plain, raNow); ok {
			t.Fatal("hint on a plain 200")
		}
	})
	assert.Zero(t, allocs, "Hint on a plain 200")

	for _, h := range []http.Header{
		raHeader("Retry-After", "Sun, 29 Nov 2026 12:00:45 GMT", "retry-after-ms", "1500"),
		raHeader("Retry-After", "Sunday, 29-Nov-26 12:00:45 GMT"),
		raHeader("RateLimit", `%"f%c3%bc";r=0;t=3;pk=:QXBwLTk5OQ==:`),
		raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1795000000"),
	} {
		resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: h}
		allocs := testing.AllocsPerRun(1000, func() {
			if _, _, ok := Hint(resp, raNow); !ok {
				t.Fatal("no hint")
			}
		})
		assert.Zero(t, allocs, "Hint on %v", h)
	}
}

// TestHintResetUnixOrSecondsByTheClock: a *-Reset value is a Unix time or
// a count of seconds by what the clock says, so a reset 40 s ahead reads
// as 40 s under testing/synctest's clock (2000) as under today's or a later
// one, and a count of seconds stays one.
func TestHintResetUnixOrSecondsByTheClock(t *testing.T) {
	for _, tt := range []struct {
		name string
		now  func() time.Time
	}{
		{"synctest's clock, 2000", time.Now},
		{"2026", func() time.Time { return raNow }},
		{"2100", func() time.Time { return time.Date(2100, time.March, 1, 0, 0, 0, 0, time.UTC) }},
		{"near the epoch", func() time.Time { return time.Unix(3600, 0) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := tt.now()
				unix := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
				for _, c := range []struct {
					name   string
					header http.Header
					want   time.Duration
				}{
					{"GitHub reset 40 s ahead", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", unix(40*time.Second)), 40 * time.Second},
					{"reset an hour ahead", raHeader("RateLimit-Reset", unix(time.Hour)), time.Hour},
					{"reset a day past", raHeader("RateLimit-Reset", unix(-24*time.Hour)), 0},
					{"60 seconds", raHeader("RateLimit-Reset", "60"), time.Minute},
					{"a day of seconds", raHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "86400"), 24 * time.Hour},
				} {
					if now.Unix() < 1e8 && c.name != "60 seconds" && c.name != "a day of seconds" {
						continue // near the epoch a Unix time is a count of seconds too
					}
					wait, _, ok := Hint(&http.Response{StatusCode: 429, Header: c.header}, now)
					assert.True(t, ok, c.name)
					assert.Equal(t, c.want, wait, c.name)
				}
			})
		})
	}
}
