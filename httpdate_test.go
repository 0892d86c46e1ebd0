package heed

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRetryAfterHTTPDate(t *testing.T) {
	runRetryAfterCases(t, raNow, []raCase{
		{"IMF-fixdate", "Sun, 29 Nov 2026 12:00:45 GMT", 45 * time.Second, true},
		{"IMF-fixdate next month", "Tue, 01 Dec 2026 12:00:00 GMT", 48 * time.Hour, true},
		{"IMF-fixdate now", "Sun, 29 Nov 2026 12:00:00 GMT", 0, true},
		{"IMF-fixdate past", "Sun, 06 Nov 1994 08:49:37 GMT", 0, true},
		{"IMF-fixdate any case", "sun, 29 NOV 2026 12:00:45 gmt", 45 * time.Second, true},
		{"IMF-fixdate with OWS", "  Sun, 29 Nov 2026 12:00:45 GMT\t", 45 * time.Second, true},
		{"weekday not checked against date", "Mon, 29 Nov 2026 12:00:45 GMT", 45 * time.Second, true},
		{"leap second is the next minute", "Sun, 29 Nov 2026 12:00:60 GMT", time.Minute, true},
		{"29 Feb of a leap year", "Tue, 29 Feb 2028 12:00:00 GMT", raUntil(2028, 2, 29, 12, 0, 0), true},
		{"29 Feb 2000", "Tue, 29 Feb 2000 12:00:00 GMT", 0, true},
		{"pre-1970", "Mon, 01 Jan 1900 00:00:00 GMT", 0, true},
		{"Unix epoch", "Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"year 0", "Sat, 01 Jan 0000 00:00:00 GMT", 0, true},
		{"far but representable", "Mon, 06 Nov 2290 08:49:37 GMT", raUntil(2290, 11, 6, 8, 49, 37), true},
		{"year 2319 overflows", "Mon, 06 Nov 2319 08:49:37 GMT", 0, false},
		{"year 9999 overflows", "Fri, 31 Dec 9999 23:59:59 GMT", 0, false},
		{"asctime", "Sun Nov 29 12:00:45 2026", 45 * time.Second, true},
		{"asctime space day", "Tue Dec  1 12:00:00 2026", 48 * time.Hour, true},
		{"asctime zero day", "Tue Dec 01 12:00:00 2026", 48 * time.Hour, true},
		{"asctime past", "Sun Nov  6 08:49:37 1994", 0, true},
		{"asctime year 9999", "Fri Dec 31 23:59:59 9999", 0, false},
		{"RFC 850", "Sunday, 29-Nov-26 12:00:45 GMT", 45 * time.Second, true},
		{"RFC 850 past", "Sunday, 06-Nov-94 08:49:37 GMT", 0, true},
		{"RFC 850 Wednesday", "Wednesday, 02-Dec-26 12:00:00 GMT", 72 * time.Hour, true},
		{"RFC 850 any case", "SUNDAY, 29-nov-26 12:00:45 Gmt", 45 * time.Second, true},

		{"zone UTC", "Sun, 29 Nov 2026 12:00:45 UTC", 0, false},
		{"numeric zone", "Sun, 29 Nov 2026 12:00:45 +0000", 0, false},
		{"no zone", "Sun, 29 Nov 2026 12:00:45", 0, false},
		{"fractional seconds", "Sun, 29 Nov 2026 12:00:45.5 GMT", 0, false},
		{"one-digit day", "Sun, 9 Nov 2026 12:00:45 GMT", 0, false},
		{"two spaces", "Sun,  29 Nov 2026 12:00:45 GMT", 0, false},
		{"long weekday in IMF", "Sunday, 29 Nov 2026 12:00:45 GMT", 0, false},
		{"unknown weekday", "Sux, 29 Nov 2026 12:00:45 GMT", 0, false},
		{"unknown month", "Sun, 29 Nox 2026 12:00:45 GMT", 0, false},
		{"31 November", "Mon, 31 Nov 2026 12:00:00 GMT", 0, false},
		{"29 Feb of a common year", "Mon, 29 Feb 2027 12:00:00 GMT", 0, false},
		{"29 Feb 2100", "Mon, 29 Feb 2100 12:00:00 GMT", 0, false},
		{"day 0", "Sun, 00 Nov 2026 12:00:00 GMT", 0, false},
		{"hour 24", "Sun, 29 Nov 2026 24:00:00 GMT", 0, false},
		{"minute 60", "Sun, 29 Nov 2026 12:60:00 GMT", 0, false},
		{"second 61", "Sun, 29 Nov 2026 12:00:61 GMT", 0, false},
		{"signed year", "Sun, 29 Nov -026 12:00:45 GMT", 0, false},
		{"two dates", "Sun, 29 Nov 2026 12:00:45 GMT, Sun, 29 Nov 2026 12:00:45 GMT", 0, false},
		{"asctime one space", "Sun Nov 6 08:49:37 1994", 0, false},
		{"asctime with zone", "Sun Nov  6 08:49:37 1994 GMT", 0, false},
		{"asctime space then two digits", "Sun Nov  16 08:49:37 1994", 0, false},
		{"RFC 850 short weekday", "Sun, 06-Nov-94 08:49:37 GMT", 0, false},
		{"RFC 850 four-digit year", "Sunday, 06-Nov-1994 08:49:37 GMT", 0, false},
		{"RFC 850 bad weekday", "Someday, 06-Nov-94 08:49:37 GMT", 0, false},
		{"RFC 850 zone EST", "Sunday, 06-Nov-94 08:49:37 EST", 0, false},
		{"RFC 3339", "2026-11-29T12:00:45Z", 0, false},
		{"comma only", ",", 0, false},
		{"weekday only", "Sunday,", 0, false},
	})
}

// TestParseRetryAfterRFC850Year checks the 50-year rule of RFC 9110 §5.6.7
// where it differs from the fixed pivot of 69 that http.ParseTime uses.
func TestParseRetryAfterRFC850Year(t *testing.T) {
	runRetryAfterCases(t, raNow, []raCase{
		{"68 is 2068", "Sunday, 06-Nov-68 08:49:37 GMT", raUntil(2068, 11, 6, 8, 49, 37), true},
		{"69 is 2069, not 1969", "Sunday, 06-Nov-69 08:49:37 GMT", raUntil(2069, 11, 6, 8, 49, 37), true},
		{"72 is 2072", "Sunday, 06-Nov-72 08:49:37 GMT", raUntil(2072, 11, 6, 8, 49, 37), true},
		{"76 before now+50y is 2076", "Friday, 06-Nov-76 08:49:37 GMT", raUntil(2076, 11, 6, 8, 49, 37), true},
		{"76 after now+50y is 1976", "Friday, 31-Dec-76 08:49:37 GMT", 0, true},
		{"77 is 1977", "Saturday, 06-Nov-77 08:49:37 GMT", 0, true},
		{"99 is 1999", "Saturday, 06-Nov-99 08:49:37 GMT", 0, true},
		{"00 is 2000", "Monday, 06-Nov-00 08:49:37 GMT", 0, true},
		{"26 later this year", "Thursday, 31-Dec-26 00:00:00 GMT", raUntil(2026, 12, 31, 0, 0, 0), true},
		{"29 Feb 00 is 2000", "Tuesday, 29-Feb-00 00:00:00 GMT", 0, true},
		{"29 Feb 27 does not exist", "Monday, 29-Feb-27 00:00:00 GMT", 0, false},
	})

	// The pivot moves with now: late in a century, a small two-digit year
	// is in the next one.
	late := time.Date(2080, time.June, 1, 0, 0, 0, 0, time.UTC)
	d, ok := ParseRetryAfter("Friday, 01-Jan-10 00:00:00 GMT", late)
	require.True(t, ok)
	assert.Equal(t, time.Date(2110, 1, 1, 0, 0, 0, 0, time.UTC).Sub(late), d)
	d, ok = ParseRetryAfter("Friday, 01-Jan-31 00:00:00 GMT", late)
	require.True(t, ok)
	assert.Zero(t, d, "2031 is the past, 2131 is more than 50 years away")

	// Against Go's pivot, for the record: http.ParseTime reads 69 as 1969.
	goT, err := http.ParseTime("Sunday, 06-Nov-69 08:49:37 GMT")
	require.NoError(t, err)
	assert.Equal(t, 1969, goT.Year())
}
