// Idempotency keys and replay safety: whether a failed send may be sent
// again, and the key heed gives a POST or PATCH.

package heed

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/heed-go/heed/internal/rules"
)

// key returns the idempotency key the request carries, if any.
func (c *call) key() string {
	if c.newKey != "" {
		return c.newKey
	}
	return rules.RequestKey(c.req.Header, c.policy.keyHeader)
}

// replaySafe reports whether an Ambiguous failure may be resent: the method
// is idempotent, the request carries an idempotency key, or the policy says
// so.
func (c *call) replaySafe() bool {
	return c.policy.retryUnsafe || rules.Idempotent(c.req.Method) || c.key() != ""
}

// newIdempotencyKey returns a random UUID (version 4).
func newIdempotencyKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
