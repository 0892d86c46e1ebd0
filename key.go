// Idempotency keys and replay safety: whether a failed send may be sent
// again, and the key heed gives a POST or PATCH, random or derived from a
// key the caller put on the context and the write itself.

package heed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/heed-go/heed/internal/rules"
)

// WithIdempotencyKey returns a copy of ctx under which the idempotency key
// heed gives a POST or PATCH (one whose Policy names a KeyHeader, sent
// without a key of its own) is derived from key instead of random. A write
// is named by its method, URL (query included) and body: its key is made
// from key, that name, and how many writes of the same name went before it
// under the context. So the same work run again under a new context made
// with the same key, as a job is when it is retried, snoozed or
// redelivered, sends each write with the key it had before, whatever their
// order and whichever were skipped; two different writes never share a
// key. A body heed cannot read again (streamed past WithBodyBuffer, or
// sent once without GetBody) gets a random key. An empty key returns ctx;
// a nested call derives from the outer key. Safe for concurrent use.
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

// keyBase is a context's key, and how many writes of each name have taken
// a key from it.
type keyBase struct {
	base string
	mu   sync.Mutex
	seen map[[sha256.Size]byte]int
}

// next returns the key of the next write named name: an RFC 9562
// version 8 UUID made from a SHA-256 of the base, the name and its place
// among the writes of that name.
func (b *keyBase) next(name [sha256.Size]byte) string {
	b.mu.Lock()
	if b.seen == nil {
		b.seen = make(map[[sha256.Size]byte]int)
	}
	n := b.seen[name]
	b.seen[name] = n + 1
	b.mu.Unlock()
	h := sha256.New()
	h.Write([]byte(b.base))
	h.Write([]byte{0})
	h.Write(name[:])
	h.Write([]byte(strconv.Itoa(n)))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	sum[6] = sum[6]&0x0f | 0x80
	sum[8] = sum[8]&0x3f | 0x80
	return formatUUID(sum[:16])
}

// giveKey returns the key heed adds to the call's request, or "" when it
// adds none: only a POST or PATCH without a key of its own, under a policy
// that names a KeyHeader, gets one. It is derived from the context's key
// when there is one and the body can be read again, else random.
func (c *call) giveKey() string {
	req := c.req
	if c.policy.keyHeader == "" || req.Method != http.MethodPost && req.Method != http.MethodPatch {
		return ""
	}
	if rules.RequestKey(req.Header, c.policy.keyHeader) != "" {
		return ""
	}
	if base, _ := req.Context().Value(keyBaseKey{}).(*keyBase); base != nil {
		if name, ok := c.writeName(); ok {
			return base.next(name)
		}
	}
	return newIdempotencyKey()
}

// writeName returns a SHA-256 of what names the call's write: its method,
// URL and body; ok is false when the body cannot be read again.
func (c *call) writeName() (name [sha256.Size]byte, ok bool) {
	h := sha256.New()
	u := *c.req.URL
	u.Fragment, u.RawFragment = "", ""
	host := u.Host
	if host == "" {
		host = c.req.Host
	}
	h.Write([]byte(c.req.Method + "\x00" + host + "\x00" + u.RequestURI() + "\x00"))
	if !c.body.digest(h, c.req) {
		return name, false
	}
	h.Sum(name[:0])
	return name, true
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

// digest writes the request body into h, reading a copy of it, and reports
// whether it could: not for a body streamed past the buffer bound, nor for
// one sent once without GetBody.
func (r *replay) digest(h hash.Hash, req *http.Request) bool {
	switch r.kind {
	case bodyBuffered:
		h.Write(r.buf)
		return true
	case bodyReaderAt:
		_, err := io.Copy(h, io.NewSectionReader(r.ra, r.off, r.n))
		return err == nil
	case bodyOnce:
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	if req.GetBody == nil {
		return false // MaxAttempts 1: the body is the caller's, read once
	}
	b, err := req.GetBody()
	if err != nil {
		return false
	}
	defer b.Close()
	_, err = io.Copy(h, b)
	return err == nil
}
