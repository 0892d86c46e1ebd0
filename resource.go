// Server-named limits: GitHub counts its limits per resource
// (x-ratelimit-resource: core, search, code_search, graphql...), so a spent
// search limit holds search calls, not core calls to the same host. heed
// learns which resource each route's requests count against from the
// responses, and gives every resource but the default its own scope.

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
// it, a new route stays in the scope itself until it is answered with a
// resource its scope already knows.
const maxResourceRoutes = 256

// resources is what a scope knows of its server-named limits.
type resources struct {
	named  atomic.Bool // some route counts against a resource of its own
	mu     sync.Mutex
	routes map[string]string // route (routeOf) → resource other than the default
	seen   map[string]bool   // every resource other than the default met
}

// of returns the resource the requests of route count against, "" for the
// scope's own.
func (r *resources) of(route string) string {
	if !r.named.Load() {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.routes[route]
}

// learn records that route's requests count against name ("" or the
// default: the scope's own).
func (r *resources) learn(route, name string) {
	if name == defaultResource {
		name = ""
	}
	if name == "" && !r.named.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routes[route] == name {
		return
	}
	if name == "" {
		delete(r.routes, route)
		return
	}
	if r.routes == nil {
		r.routes, r.seen = make(map[string]string), make(map[string]bool)
	}
	if len(r.routes) >= maxResourceRoutes {
		return
	}
	r.routes[route] = name
	r.seen[name] = true
	r.named.Store(true)
}

// all returns every resource other than the default this scope has met.
func (r *resources) all() []string {
	if !r.named.Load() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
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

// routeOf names the route of req that a resource is learned for: its
// method and the first two segments of its path, as /search/code and
// /search/issues, or /repos/octocat, are told apart.
func routeOf(req *http.Request) string {
	p := req.URL.Path
	end, slashes := len(p), 0
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			if slashes++; slashes == 2 {
				end = i
				break
			}
		}
	}
	return req.Method + " " + p[:end]
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
	resourceSame  resourceAnswer = iota // the send's own, or no resource in a scope that names none
	resourceOther                       // another than the send's: call.named, learned now for its route
	resourceNone                        // none, in a scope whose server names some: every resource's
)

// learnResource reads the resource resp names (GitHub's
// x-ratelimit-resource), learns it for the request's route, and says how it
// stands to the resource the send went in. A scope that names none costs a
// header lookup.
func (c *call) learnResource(resp *http.Response) resourceAnswer {
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
	current := ""
	if c.local != c.base {
		current = strings.TrimPrefix(c.scope, c.baseScope+"#")
	}
	if name == current {
		return resourceSame
	}
	c.base.resources.learn(routeOf(c.req), name)
	if name == "" {
		c.named = ""
		// Named the scope's own, from a send that went in a resource: the
		// route has moved back.
		return resourceSame
	}
	c.named = name
	return resourceOther
}
