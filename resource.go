// Server-named limits: GitHub counts its limits per resource
// (x-ratelimit-resource: core, search, code_search, graphql...), so a spent
// search limit holds search calls, not core calls to the same host. heed
// learns which resource each route's requests count against from the
// responses, and gives every resource but the default its own scope; a
// call whose answer names another resource moves to it for its retries.

package heed

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// hdrResource is GitHub's field naming the limit a response counted
// against.
const hdrResource = "X-Ratelimit-Resource"

// defaultResource is the resource of the scope itself: GitHub's "core",
// which most endpoints count against, and every request of a route not yet
// learned.
const defaultResource = "core"

// maxResourceRoutes bounds the routes a scope learns resources for; past
// it, a new route's answers are counted in the scope itself, whatever
// resource they name.
const maxResourceRoutes = 256

// resources is what a scope knows of its server-named limits.
type resources struct {
	named  atomic.Bool // some route counts against a resource of its own
	mu     sync.RWMutex
	routes map[route]string // route → resource other than the default
	seen   map[string]bool  // every resource other than the default met
}

// of returns the resource the requests of route count against, "" for the
// scope's own.
func (r *resources) of(rt route) string {
	if !r.named.Load() {
		return ""
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.routes[rt]
}

// learn records that rt's requests count against name ("": the scope's
// own), and reports whether it is recorded: false past maxResourceRoutes.
func (r *resources) learn(rt route, name string) bool {
	if name == "" && !r.named.Load() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routes[rt] == name {
		return true
	}
	if name == "" {
		delete(r.routes, rt)
		return true
	}
	if r.routes == nil {
		r.routes, r.seen = make(map[route]string), make(map[string]bool)
	}
	if _, known := r.routes[rt]; !known && len(r.routes) >= maxResourceRoutes {
		return false
	}
	r.routes[rt] = name
	r.seen[name] = true
	r.named.Store(true)
	return true
}

// all returns every resource other than the default this scope has met.
func (r *resources) all() []string {
	if !r.named.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.seen))
	for n := range r.seen {
		names = append(names, n)
	}
	return names
}

// resourceOf returns the resource a response names, "" when it names none,
// or names one longer than a name is.
func resourceOf(resp *http.Response) string {
	if resp == nil {
		return ""
	}
	v := resp.Header[hdrResource]
	if len(v) != 1 || len(v[0]) > 64 {
		return ""
	}
	return strings.TrimSpace(v[0])
}

// route is what a resource is learned for: a request's method and path,
// as GitHub's resources go by endpoint, some of them by repository
// (code_scanning_upload, for one repository's uploads). A struct, so that
// looking one up builds no string.
type route struct{ method, path string }

// routeOf returns the route of req.
func routeOf(req *http.Request) route {
	return route{req.Method, req.URL.Path}
}

// resourceScope is the scope of resource name within scope, as
// "api.github.com#search".
func resourceScope(scope, name string) string {
	return scope + "#" + name
}

// resourceAnswer is what a response says of the resource it counted
// against, for the send it answers.
type resourceAnswer uint8

const (
	resourceSame  resourceAnswer = iota // the send's own, or none in a scope whose server names none
	resourceOther                       // another, now learned for the route: call.next; the call moves to it
	resourceNone                        // none, in a scope whose server names some: every resource's
)

// answerResource reads the resource resp names (GitHub's
// x-ratelimit-resource), learns it for the request's route, and says how it
// stands to the resource the send went in. A scope whose server names none
// costs a header lookup.
func (c *call) answerResource(resp *http.Response) resourceAnswer {
	name := resourceOf(resp)
	if name == "" {
		if resp != nil && c.base.resources.named.Load() {
			return resourceNone
		}
		return resourceSame
	}
	if name == defaultResource {
		name = ""
	}
	if name == c.resource {
		return resourceSame
	}
	if !c.base.resources.learn(routeOf(c.req), name) {
		return resourceSame // past the cap: the route's answers are the scope's
	}
	c.next = name
	return resourceOther
}

// resourceTarget returns the scope, and its state, that an answer counts
// in: the next resource's for resourceOther, else the send's own.
func (c *call) resourceTarget(answer resourceAnswer) (*scopeLocal, string) {
	if answer != resourceOther {
		return c.local, c.scope
	}
	if c.next == "" {
		return c.base, c.baseScope
	}
	scope := resourceScope(c.baseScope, c.next)
	local, _, _ := c.transport.scope(c.policy, scope)
	return local, scope
}

// moveResource moves the call to the resource its last answer named, for
// its retries; the retry budget and Limit stay the scope's.
func (c *call) moveResource() {
	c.local, c.scope = c.resourceTarget(resourceOther)
	c.resource = c.next
}
