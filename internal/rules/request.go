// Replay safety: whether a request may be sent again.

package rules

import (
	"net/http"
	"net/url"
	"strings"
)

// Idempotent reports whether RFC 9110 makes method idempotent ("" is GET).
func Idempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// RequestKey returns the idempotency key h carries, if any: under
// keyHeader (when not ""), Idempotency-Key or X-Idempotency-Key.
func RequestKey(h http.Header, keyHeader string) string {
	if keyHeader != "" {
		if k := h.Get(keyHeader); k != "" {
			return k
		}
	}
	if k := h.Get("Idempotency-Key"); k != "" {
		return k
	}
	return h.Get("X-Idempotency-Key")
}

// RedactURL returns u without userinfo, query or fragment.
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	host, path := u.Host, u.EscapedPath()
	if u.Opaque != "" {
		// scheme:opaque; an opaque of the form //[userinfo@]host/path
		// names the authority itself.
		op, _, _ := strings.Cut(u.Opaque, "?")
		rest, ok := strings.CutPrefix(op, "//")
		if !ok {
			return u.Scheme + ":" + op
		}
		authority, p, slash := strings.Cut(rest, "/")
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			authority = authority[i+1:]
		}
		host, path = authority, ""
		if slash {
			path = "/" + p
		}
	}
	var b strings.Builder
	b.Grow(len(u.Scheme) + 3 + len(host) + len(path))
	if u.Scheme != "" {
		b.WriteString(u.Scheme)
		b.WriteString("://")
	}
	b.WriteString(host)
	b.WriteString(path)
	return b.String()
}
