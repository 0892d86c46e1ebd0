// Idempotency keys and replay safety: whether a failed send may be sent
// again, and the key heed gives a POST or PATCH, random or derived from a
// key the caller put on the context.

package heed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"

	"github.com/heed-go/heed/internal/rules"
)

// defaultKeyHeader is the header a context's key goes in when the policy
// names none.
const defaultKeyHeader = "Idempotency-Key"

// WithIdempotencyKey returns a copy of ctx under which every POST and PATCH
// that carries no idempotency key of its own gets one derived from key, the
// same on every attempt. The n-th such request to one method, host and path
// gets the same key each time the same work runs again under a new context
// made with the same key, as a job does when it is retried, snoozed or
// redelivered, so a create that landed before a crash is not applied twice.
// The header is Policy.KeyHeader, or Idempotency-Key when the policy names
// none. Requests running at once to one URL take their places in the order
// they start; give each its own key (a nested call derives from the outer
// key) where that order can change. An empty key returns ctx. The context
// is safe for concurrent use.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	if outer, ok := ctx.Value(keyBaseKey{}).(*keyBase); ok {
		key = outer.base + "\x00" + key
	}
	return context.WithValue(ctx, keyBaseKey{}, &keyBase{base: key})
}

// keyBaseKey is the context key of a *keyBase.
type keyBaseKey struct{}

// keyBase is a context's key, and how many requests to each URL have
// taken a key from it.
type keyBase struct {
	base string
	mu   sync.Mutex
	seen map[string]int
}

// next returns the key of req, the next request to its method, host and
// path: an RFC 9562 version 8 UUID made from a SHA-256 of the base, the
// method, host, path and place.
func (b *keyBase) next(req *http.Request) string {
	target := req.Method + "\x00" + req.URL.Host + "\x00" + req.URL.EscapedPath()
	b.mu.Lock()
	if b.seen == nil {
		b.seen = make(map[string]int)
	}
	n := b.seen[target]
	b.seen[target] = n + 1
	b.mu.Unlock()
	sum := sha256.Sum256([]byte(b.base + "\x00" + target + "\x00" + strconv.Itoa(n)))
	sum[6] = sum[6]&0x0f | 0x80
	sum[8] = sum[8]&0x3f | 0x80
	return formatUUID(sum[:16])
}

// newKey returns the key heed adds to req, and the header it goes in, or
// "" when heed adds none: req is a POST or PATCH with no key of its own,
// and its context has a key or the policy names a KeyHeader.
func newKey(req *http.Request, keyHeader string) (key, header string) {
	if req.Method != http.MethodPost && req.Method != http.MethodPatch {
		return "", ""
	}
	base, _ := req.Context().Value(keyBaseKey{}).(*keyBase)
	if base == nil && keyHeader == "" {
		return "", ""
	}
	if rules.RequestKey(req.Header, keyHeader) != "" {
		return "", ""
	}
	header = keyHeader
	if header == "" {
		header = defaultKeyHeader
	}
	if base == nil {
		return newIdempotencyKey(), header
	}
	return base.next(req), header
}

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
	return formatUUID(u[:])
}

// formatUUID spells 16 bytes as a UUID.
func formatUUID(u []byte) string {
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
