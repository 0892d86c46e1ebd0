package heed

import (
	"net/http"
	"strconv"
	"time"
)

// ParseRetryAfter parses a Retry-After value: delay-seconds or an HTTP-date.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// Hint returns the wait a response asks for, and the header it came from.
func Hint(resp *http.Response, now time.Time) (wait time.Duration, source string, ok bool) {
	if resp == nil {
		return 0, "", false
	}
	if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
		return d, "Retry-After", true
	}
	return 0, "", false
}
