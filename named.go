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
// a limit is a scope of its own in the gate, within the request's scope
// (the policy's, or the host): its holds and published quotas hold only the
// sends the server counts against it, so a spent search limit does not
// hold GitHub's core calls. Everything else a Transport keeps of a scope
// (the pace, the learned cap, a Policy.Limit, the retry budget, the waiting
// line) stays the request scope's.
//
// The server names the limit only in its answer, so a Transport learns,
// per request scope, which name each request shape (its method and path,
// each segment with a digit in it read as a parameter) was answered with.
// A shape not yet answered is taken to count against the resource the
// server named for most shapes when it first answered them (GitHub's core),
// once at least two and more than half of them were; with no such resource
// (early on, or Discord's buckets, which are per route), against the
// request's scope alone. A send in a named limit is held by its
// request scope's hold too: a throttle that names no limit, or Discord's
// global one (X-RateLimit-Global: true, X-RateLimit-Scope: global), holds
// every send of the scope.
//
// Named limits are kept apart in a Transport's own gate, and in a gate
// given by WithGate that keeps paces (Transport.split): there the
// Transports sharing it share what they learned of the names too
// (fleetnames.go), since one that has not would send into a limit held
// there. In a gate of another kind, the whole scope is held, as for any
// server.

// Bounds on what a Transport keeps of named limits: request scopes with
// names, shapes per scope (past it, a shape learned anew takes the place
// of one that counts against the default resource, if any of the first
// few looked at does), and names counted per scope for its default.
const (
	namedScopesKeep = 256
	namedKeep       = 4096
	namedVotesKeep  = 16
)

// namedRedate is how often, at most, an answer that gives a shape the name
// it has dates it anew: the latest answer's name wins among a fleet's
// Transports (fleetnames.go), and dating each would take a write lock.
const namedRedate = 100 * time.Millisecond

// names is what a Transport learned of server-named limits.
type names struct {
	dated  bool        // a fleet shares the names: answers date them (fleetnames.go)
	any    atomic.Bool // a name was ever learned: until then nothing is looked up
	mu     sync.RWMutex
	scopes map[string]*scopeNames // by request scope
}

// scopeNames is what a Transport learned of one request scope's limits.
type scopeNames struct {
	// live holds, by name, the end of the latest hold or spent quota of a
	// named limit: till then, no shape of it, nor the scope, is forgotten
	live     map[string]time.Time
	shapes   map[string]learned // shape → the name it was last answered with
	votes    map[string]int     // resource → shapes first answered with it
	fallback string             // the resource of a shape not yet answered (elect)
	// misses holds, by shape, when the fleet's names were last merged for
	// a send of a shape not seen answered (fleetnames.go), as a mono
	// count, negated for a shape served with no name (unnamedMark: not
	// since); at most namedLook
	misses map[string]int64
}

// learned is the name a shape was answered with, and when that was
// learned, in Unix milliseconds: of two names of a shape, the later wins
// (fleetnames.go); first is when the Transport first knew the shape,
// which ranks it for the fleet's bounds.
type learned struct {
	name      string
	at, first int64
}

// lookup returns the name req is taken to count against in scope: its
// shape's, or the scope's default resource; "" when none. Until a server
// names a limit it costs an atomic load; then, for a scope whose server
// never named one, a map look-up.
func (n *names) lookup(scope string, req *lazyShape) string {
	if !n.any.Load() {
		return ""
	}
	n.mu.RLock()
	sn := n.scopes[scope]
	n.mu.RUnlock()
	if sn == nil {
		return ""
	}
	k := req.get()
	n.mu.RLock()
	defer n.mu.RUnlock()
	if l, ok := sn.shapes[k]; ok {
		return l.name
	}
	return sn.fallback
}

// learn records that the server counted req, of scope, against name, and
// reports whether req's shape now counts against it, and whether that is
// news. It does not count when the bounds are full of limits that hold:
// forgetting one would send into its hold, so the new name is not
// learned, and its answer holds the whole request scope instead. A name
// the shape already has is learned again, to date it (fleetnames.go), at
// most every namedRedate.
func (n *names) learn(scope string, req *lazyShape, name string) (counts, news bool) {
	k := req.get()
	n.mu.RLock()
	sn := n.scopes[scope]
	l := learned{}
	if sn != nil {
		l = sn.shapes[k]
	}
	n.mu.RUnlock()
	if l.name == name && (!n.dated || time.Now().UnixMilli()-l.at < namedRedate.Milliseconds()) {
		return true, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	if sn = n.scopes[scope]; sn != nil {
		if l, ok := sn.shapes[k]; ok && l.name == name {
			sn.shapes[k] = learned{name, max(now.UnixMilli(), l.at), l.first}
			return true, false
		}
	}
	if n.scopes == nil {
		n.scopes = make(map[string]*scopeNames)
	}
	if sn == nil {
		if len(n.scopes) >= namedScopesKeep && !n.forgetScope(now) {
			return false, false
		}
		sn = newScopeNames()
		n.scopes[scope] = sn
	}
	if _, known := sn.shapes[k]; !known {
		if len(sn.shapes) >= namedKeep && !sn.forgetOne(now) {
			return false, false
		}
		if strings.HasPrefix(name, "resource ") && (sn.votes[name] > 0 || len(sn.votes) < namedVotesKeep) {
			sn.votes[name]++
			if !sn.live[sn.fallback].After(now) {
				// Not while the default holds: the shapes never seen that
				// it holds would go unheld.
				sn.fallback = sn.elect()
			}
		}
	}
	// Later than the name it replaces, as this Transport knows it, though
	// the clock has not moved or the name came from a clock ahead.
	first := sn.shapes[k].first
	if first == 0 {
		first = now.UnixMilli()
	}
	sn.shapes[k] = learned{name, max(now.UnixMilli(), sn.shapes[k].at+1), first}
	n.any.Store(true)
	return true, true
}

// newScopeNames returns an empty scopeNames.
func newScopeNames() *scopeNames {
	return &scopeNames{live: make(map[string]time.Time), shapes: make(map[string]learned), votes: make(map[string]int)}
}

// holds reports whether one of sn's named limits holds at now.
func (sn *scopeNames) holds(now time.Time) bool {
	for _, until := range sn.live {
		if until.After(now) {
			return true
		}
	}
	return false
}

// namedLook bounds the entries a bound looks at for one to forget: never
// a scan of them all.
const namedLook = 64

// forgetScope forgets the names of a scope none of whose named limits
// holds, among the first namedLook, and reports whether there was one.
func (n *names) forgetScope(now time.Time) bool {
	looked := 0
	for scope, sn := range n.scopes {
		if !sn.holds(now) {
			delete(n.scopes, scope)
			return true
		}
		if looked++; looked == namedLook {
			break
		}
	}
	return false
}

// forgetOne forgets a shape whose named limit holds nothing, among the
// first namedLook, one of the default resource first (its look-up still
// finds its name), and reports whether there was one.
func (sn *scopeNames) forgetOne(now time.Time) bool {
	looked := 0
	other := ""
	for k, l := range sn.shapes {
		name := l.name
		if sn.fallback != "" && name == sn.fallback && !sn.live[name].After(now) {
			delete(sn.shapes, k)
			return true
		}
		if other == "" && !sn.live[name].After(now) {
			other = k
		}
		if looked++; looked == namedLook {
			break
		}
	}
	if other == "" {
		return false
	}
	delete(sn.shapes, other)
	return true
}

// held records that scope's limit name holds, or has spent its quota,
// until then, and reports whether it did not hold before.
func (n *names) held(scope, name string, until time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	sn := n.scopes[scope]
	if sn == nil || !until.After(sn.live[name]) {
		return false
	}
	began := !sn.live[name].After(time.Now())
	if _, ok := sn.live[name]; !ok && len(sn.live) >= namedLook {
		// Names whose holds are over go; those that hold stay, however
		// many, till they end.
		now := time.Now()
		for other, end := range sn.live {
			if !end.After(now) {
				delete(sn.live, other)
			}
		}
	}
	sn.live[name] = until
	return began
}

// elect returns the default resource: the one named for most shapes when
// first answered, if at least two and more than half of them; else none.
func (sn *scopeNames) elect() string { return electFrom(sn.votes) }

// electFrom returns the default resource of votes, the count of shapes
// first answered with each resource (scopeNames.elect).
func electFrom(votes map[string]int) string {
	best, total := "", 0
	for name, n := range votes {
		total += n
		if n > votes[best] || (n == votes[best] && name < best) {
			best = name
		}
	}
	if n := votes[best]; n >= 2 && 2*n > total {
		return best
	}
	return ""
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

// lazyShape is a request's shape, worked out once, when first needed: a
// call looks it up at each turn at the gate, at the wire and at each
// answer.
type lazyShape struct {
	req *http.Request
	key string
}

// get returns the shape of s.req.
func (s *lazyShape) get() string {
	if s.key == "" {
		s.key = shape(s.req)
	}
	return s.key
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
// first channel, guild or webhook segment and its ID; "" when there is
// none. A webhook's token, which Discord counts with its ID, is left out:
// the ID alone names the webhook, and a scope name is no place for a
// secret (it is a gate key, and may be logged).
func majorParameter(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		switch segs[i] {
		case "channels", "guilds", "webhooks":
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

// answerScope reads where the answer of the current send, whose header's
// marks are m, holds (c.holdIn, "" for the request scope): the limit it
// names, learned for the request's shape; the request scope, for a global
// limit, for a throttle while the limit named has sends left (GitHub's
// secondary limits, which name the resource but count the whole account)
// or, from a send in a named limit, for an answer that names none; else
// the scope the send was admitted in. Later attempts of the call are
// admitted in the limit named.
func (c *call) answerScope(resp *http.Response, m marks, throttled bool) {
	c.holdIn, c.holdAs = c.gateScope(), c.takenAs
	if resp == nil {
		return
	}
	name, global := "", false
	if m&markNamed != 0 {
		name, global = serverName(resp.Header)
	}
	switch {
	case global:
		c.holdIn = c.scope
	case name != "" && c.learn(name):
		c.holdIn, c.holdAs = namedScope(c.scope, name, c.req), name
		c.named, c.namedAs = c.holdIn, name
		if left, state := remainingField(resp.Header, hdrXRemaining); throttled && state == remainingValid && left > 0 {
			c.holdIn = c.scope // refused by no limit it names
		}
	case name != "":
		c.holdIn = c.scope // not learned: the whole scope holds
	case c.named != "":
		c.holdIn = c.scope
	}
	if c.holdIn == c.scope {
		c.holdIn = ""
	}
}

// learn records that the server counted the call's request against name,
// and reports whether the request's shape now counts against it. News is
// told to the fleet's names once the gate has the answer (tellFleet).
func (c *call) learn(name string) bool {
	counts, news := c.transport.named.learn(c.scope, &c.shape, name)
	c.news = c.news || news
	return counts
}

// held records that the call's scope's limit name holds, or has spent its
// quota, until then; that it begins to is news for the fleet's names.
func (c *call) held(name string, until time.Time) {
	c.news = c.transport.named.held(c.scope, name, until) || c.news
}

// tellFleet merges the news the call's answer brought with the fleet's
// names (fleetnames.go), once its hold and quota are the gate's: the
// fleet's other sends are held a merge sooner.
func (c *call) tellFleet() {
	if c.news {
		c.news = false
		if c.transport.fleet != nil {
			c.transport.fleet.news(c.ctx, &c.transport.named)
		}
	}
}

// lookName sets the limit the call's next send is admitted in from what
// the Transport knows now, merged first, with merge, with what the fleet
// knows when its gate is shared (fleetnames.go): another call may have
// learned the shape's name since this one began, or while it waited. A
// call that waited since it last looked (waited) merges for a shape not
// seen answered even if that shape was merged for within the second. A
// limit this call's answers named is kept when the Transport no longer
// knows the shape.
func (c *call) lookName(merge, waited bool) {
	if !c.transport.split {
		return
	}
	if merge && c.transport.fleet != nil {
		c.transport.fleet.refresh(c.ctx, &c.transport.named, c.scope, &c.shape, waited)
	}
	if name := c.transport.named.lookup(c.scope, &c.shape); name != "" {
		c.named, c.namedAs = namedScope(c.scope, name, c.req), name
	}
}

// gateScope is the scope the call's sends are admitted in: its named limit,
// else its request scope.
func (c *call) gateScope() string {
	if c.named != "" {
		return c.named
	}
	return c.scope
}

// scopeHold returns the end of the request scope's hold or spent quota,
// for a send in a named limit, when it is after now; else the zero time.
func (c *call) scopeHold(now time.Time) time.Time {
	if c.named == "" {
		return time.Time{}
	}
	if until := c.transport.admit.reset(c.ctx, c.scope); until.After(now) {
		return until
	}
	return time.Time{}
}
