// Server-named scopes: a limit the server names in its answers (GitHub's
// x-ratelimit-resource, Discord's X-RateLimit-Bucket) is a scope of its own
// within the request's scope.

package heed

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Some servers count one host's requests against several limits and say
// which one each answer counted: GitHub's x-ratelimit-resource (core,
// search, graphql, code_search…), Discord's X-RateLimit-Bucket (a hash, per
// route, counted per major parameter: the channel, guild or webhook). Such
// a limit is a scope of its own within the request's scope (the policy's,
// or the host): its holds and published quotas hold only the requests the
// server counts against it, so a spent search limit does not hold GitHub's
// core calls.
//
// The server names the limit only in its answer, so a Transport learns, per
// scope, which name each request shape (its method and path, each segment
// with a digit in it read as a parameter) was answered with, and sends the
// next request of that shape in the named scope. A request of a shape not
// yet answered goes in the request's scope. A named request is also held by
// its request's scope: a throttle that names no limit, or Discord's global
// one (X-RateLimit-Global: true, X-RateLimit-Scope: global), holds every
// request of the scope.

// namedKeep bounds the request shapes a Transport keeps the names of; past
// it, a shape learned anew takes the place of another.
const namedKeep = 4096

// names is what a Transport learned of server-named scopes.
type names struct {
	seen atomic.Bool // a name was ever learned: until then nothing is looked up
	mu   sync.RWMutex
	m    map[string]string // scope "\x00" shape → the server's name
}

// lookup returns the name the server gave req's shape in scope; "" when
// none yet.
func (n *names) lookup(scope string, req *http.Request) string {
	if !n.seen.Load() {
		return ""
	}
	k := scope + "\x00" + shape(req)
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.m[k]
}

// learn records that the server counted req, of scope, against name.
func (n *names) learn(scope string, req *http.Request, name string) {
	k := scope + "\x00" + shape(req)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m[k] == name {
		return
	}
	if n.m == nil {
		n.m = make(map[string]string)
	}
	if _, ok := n.m[k]; !ok && len(n.m) >= namedKeep {
		for old := range n.m {
			delete(n.m, old)
			break
		}
	}
	n.m[k] = name
	n.seen.Store(true)
}

// serverName returns the name h gives the limit its request was counted
// against, or global when h says the limit is the whole scope's (Discord's
// global limit); "" and false when it names none. A name is 1 to 64 bytes
// of letters, digits, '-', '_' and '.'; anything else is not read.
func serverName(h http.Header) (name string, global bool) {
	if strings.EqualFold(strings.TrimSpace(h.Get("X-Ratelimit-Global")), "true") ||
		strings.EqualFold(strings.TrimSpace(h.Get("X-Ratelimit-Scope")), "global") {
		return "", true
	}
	if b := strings.TrimSpace(h.Get("X-Ratelimit-Bucket")); nameToken(b) {
		return "bucket " + b, false
	}
	if r := strings.TrimSpace(h.Get("X-Ratelimit-Resource")); nameToken(r) {
		return "resource " + r, false
	}
	return "", false
}

// nameToken reports whether s can name a limit.
func nameToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// shape is req's method and escaped path, each path segment with a digit
// in it written as "{}": the requests a server names alike.
func shape(req *http.Request) string {
	path := req.URL.EscapedPath()
	var b strings.Builder
	b.Grow(len(req.Method) + 1 + len(path))
	b.WriteString(req.Method)
	b.WriteByte(' ')
	for i, seg := range strings.Split(path, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if strings.ContainsAny(seg, "0123456789") {
			b.WriteString("{}")
		} else {
			b.WriteString(seg)
		}
	}
	return b.String()
}

// majorParameter returns the part of path Discord counts a bucket per: the
// first channel, guild or webhook segment and its ID (a webhook's token
// too); "" when there is none.
func majorParameter(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		switch segs[i] {
		case "channels", "guilds":
			return segs[i] + "/" + segs[i+1]
		case "webhooks":
			if i+2 < len(segs) {
				return segs[i] + "/" + segs[i+1] + "/" + segs[i+2]
			}
			return segs[i] + "/" + segs[i+1]
		}
	}
	return ""
}

// namedScope returns the scope of the limit name within scope, for req.
func namedScope(scope, name string, req *http.Request) string {
	s := scope + "\x1f" + name
	if strings.HasPrefix(name, "bucket ") {
		if p := majorParameter(req.URL.EscapedPath()); p != "" {
			s += "\x1f" + p
		}
	}
	return s
}

// nameAnswered reads the limit a response names, when its header has a
// field that may name one: it learns the name of the request's shape, and
// sets where the response's hold and quota go (c.holdIn): the named scope,
// or, for a global limit, the request's scope.
func (c *call) nameAnswered(h http.Header) {
	name, global := serverName(h)
	base := c.scope
	if c.base != "" {
		base = c.base
	}
	switch {
	case global:
		c.holdIn = base
	case name != "":
		c.transport.named.learn(base, c.req, name)
		c.holdIn = namedScope(base, name, c.req)
	default:
		c.holdIn = base
	}
}

// answerScope sets where the answer of the current send, whose header's
// marks are m, holds: see nameAnswered. A named send whose answer names no
// limit holds the request's scope, and so every named one in it.
func (c *call) answerScope(resp *http.Response, m marks) {
	switch {
	case resp != nil && m&markNamed != 0:
		c.nameAnswered(resp.Header)
	case c.base != "":
		c.holdIn = c.base
	}
	if c.holdIn == c.scope {
		c.holdIn = ""
	}
}

// baseHold returns the end of the hold of a named send's request scope,
// when it is after now; else the zero time.
func (c *call) baseHold(now time.Time) time.Time {
	if until, _ := c.transport.admit.hold(c.ctx, c.base); until.After(now) {
		return until
	}
	return time.Time{}
}
