// Room: what a leaky bucket's published fill says is left of it, read as
// evidence for the pace, not as a quota.

package heed

import (
	"net/http"
	"strings"
)

// roomField is Shopify REST's leaky bucket fill, "used/size": 39/40.
const roomField = "X-Shopify-Shop-Api-Call-Limit"

// bucketRoom reads h's leaky bucket fill (roomField) and returns the room
// it leaves, size − used, at least 0. A bucket's fill carries no time, as
// its drain rate is the plan's, so it holds nothing at the gate: while a
// scope is paced it steers the rate as a published quota's room does
// (headroom). A value that is not two decimal counts, the size at least 1,
// is not read.
func bucketRoom(h http.Header) (int64, bool) {
	v := h[roomField]
	if len(v) != 1 {
		return 0, false
	}
	used, size, ok := strings.Cut(strings.TrimSpace(v[0]), "/")
	if !ok {
		return 0, false
	}
	u, uok := decimalCount(strings.TrimSpace(used))
	n, nok := decimalCount(strings.TrimSpace(size))
	if !uok || !nok || n < 1 {
		return 0, false
	}
	return max(n-u, 0), true
}

// decimalCount reads s as a count: one to eighteen digits, nothing else.
func decimalCount(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}
