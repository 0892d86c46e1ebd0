// Header marks: which of the fields that a success may carry and heed
// reads a response has, found in one look at its header, so that the
// common response with none of them costs one look.

package heed

import "net/http"

// marks are the fields of a response's header heed reads on every answer.
type marks uint8

const (
	markQuota       marks = 1 << iota // a field quota reads a remaining count from
	markShouldRetry                   // Stripe-Should-Retry or X-Should-Retry
	markAge                           // Age: a cache served it
	markNamed                         // a field that names the server's limit (named.go)
	markRoom                          // a leaky bucket's fill (room.go)
)

// markHeader returns the marks of h: a field set to a nil value is not
// there, as the readers of each take it. A small header (up to 8 keys, where
// Go's map hashes every long key it is asked for) is looked at key by key;
// a larger one is asked for each field.
func markHeader(h http.Header) marks {
	var m marks
	if len(h) > 8 {
		if h["Ratelimit"] != nil || h["Ratelimit-Remaining"] != nil ||
			h["X-Ratelimit-Remaining"] != nil || h["X-Rate-Limit-Remaining"] != nil ||
			h["X-Ratelimit-Remaining-Requests"] != nil || h["Anthropic-Ratelimit-Requests-Remaining"] != nil {
			m |= markQuota
		}
		if h["Stripe-Should-Retry"] != nil || h["X-Should-Retry"] != nil {
			m |= markShouldRetry
		}
		if h["Age"] != nil {
			m |= markAge
		}
		if h["X-Ratelimit-Resource"] != nil || h["X-Ratelimit-Bucket"] != nil ||
			h["X-Ratelimit-Global"] != nil || h["X-Ratelimit-Scope"] != nil {
			m |= markNamed
		}
		if h[roomField] != nil {
			m |= markRoom
		}
		return m
	}
	for k, v := range h {
		if v == nil || len(k) < len("Age") || k[0] != 'R' && k[0] != 'X' && k[0] != 'A' && k[0] != 'S' {
			continue
		}
		switch k {
		case "Ratelimit", "Ratelimit-Remaining", "X-Ratelimit-Remaining", "X-Rate-Limit-Remaining",
			"X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Requests-Remaining":
			m |= markQuota
		case "Stripe-Should-Retry", "X-Should-Retry":
			m |= markShouldRetry
		case "Age":
			m |= markAge
		case "X-Ratelimit-Resource", "X-Ratelimit-Bucket", "X-Ratelimit-Global", "X-Ratelimit-Scope":
			m |= markNamed
		case roomField:
			m |= markRoom
		}
	}
	return m
}
