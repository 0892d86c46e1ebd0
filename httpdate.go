// HTTP-dates (RFC 9110 §5.6.7): the three forms a Retry-After date may
// take.

package heed

import "time"

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
