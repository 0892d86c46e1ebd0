// Routes: which Policy a request gets, matched as net/http.ServeMux matches
// patterns, with a cache of recent matches.

package heed

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
)

type routeSpec struct {
	pattern string
	policy  Policy
}

// routes matches requests to policies with a net/http.ServeMux, so pattern
// syntax and precedence are exactly the standard library's.
type routes struct {
	mux   *http.ServeMux
	cache *routeCache
}

// routeCache remembers the policy of recent (method, host, escaped path)
// triples, since ServeMux allocates on every match. It holds at most
// routeCacheSize entries and starts over when full.
type routeCache struct {
	mu sync.RWMutex
	m  map[routeKey]*policy // nil policy: no route matched
}

type routeKey struct{ method, host, path string } // path: as sent, escaped

const routeCacheSize = 4096

// routeHandler marks a route in the mux; it is never served.
type routeHandler struct{ p *policy }

func (routeHandler) ServeHTTP(http.ResponseWriter, *http.Request) {}

// compileRoutes builds the route matcher, or says which pattern is bad.
func compileRoutes(specs []routeSpec) (r routes, err error) {
	if len(specs) == 0 {
		return routes{}, nil
	}
	mux := http.NewServeMux()
	for _, s := range specs {
		if err := handle(mux, s.pattern, routeHandler{resolve(s.policy, s.pattern)}); err != nil {
			return routes{}, err
		}
	}
	return routes{mux: mux, cache: &routeCache{m: make(map[routeKey]*policy)}}, nil
}

// handle registers h, turning ServeMux's panic on a bad pattern into an error.
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("heed: route %q: %v", pattern, v)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// match returns the policy of the most specific route that matches req, or
// nil.
func (r routes) match(req *http.Request) *policy {
	if r.mux == nil || req.URL == nil || req.Method == http.MethodConnect {
		return nil
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet // as net/http sends it
	}
	// ServeMux matches the escaped path, where an encoded slash (%2F) is
	// part of a segment, not a separator: key on that form, so that two
	// paths that decode alike but match differently never share an entry.
	escaped := wirePath(req.URL)
	k := routeKey{method, host, escaped}
	r.cache.mu.RLock()
	pol, hit := r.cache.m[k]
	r.cache.mu.RUnlock()
	if hit {
		return pol
	}
	pol = r.lookup(req, k)
	r.cache.mu.Lock()
	if len(r.cache.m) >= routeCacheSize {
		clear(r.cache.m)
	}
	r.cache.m[k] = pol
	r.cache.mu.Unlock()
	return pol
}

// wirePath returns the escaped path u is sent with: its escaped path, or
// for an opaque URL the path part of Opaque, which net/http sends as it is.
func wirePath(u *url.URL) string {
	o := u.Opaque
	if o == "" {
		return u.EscapedPath()
	}
	if rest, ok := strings.CutPrefix(o, "//"); ok {
		// "//host/path": sent as an absolute URL, whose path is the rest.
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
		return "/"
	}
	return o
}

// lookup asks the ServeMux for req's route; k holds the method, host and
// escaped path it is sent with.
func (r routes) lookup(req *http.Request, k routeKey) *policy {
	m := req
	p := cleanPath(k.path)
	// ServeMux matches on r.Method, r.Host and the escaped r.URL.Path, and
	// redirects unclean paths; a client request may carry none of these
	// forms, so match a shallow stand-in when needed, whose escaped path is
	// the cleaned one.
	if k.host != req.Host || k.method != req.Method || p != k.path || req.URL.Opaque != "" {
		u := *req.URL
		u.Opaque = ""
		u.RawPath = p
		if dec, err := url.PathUnescape(p); err == nil {
			u.Path = dec
		} else {
			u.Path, u.RawPath = p, "" // an Opaque path may be invalid escaping
		}
		m = &http.Request{Method: k.method, Host: k.host, URL: &u, Header: req.Header}
	}
	h, _ := r.mux.Handler(m)
	if rh, ok := h.(routeHandler); ok {
		return rh.p
	}
	return nil
}

// cleanPath is path.Clean that keeps a trailing slash and a leading one, as
// ServeMux cleans paths before matching.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			return p
		}
		np += "/"
	}
	return np
}
