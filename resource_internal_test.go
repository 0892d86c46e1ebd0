package heed

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRouteOf(t *testing.T) {
	for _, path := range []string{"", "/graphql", "/search/code", "/repos/octocat/hello/code-scanning/sarifs"} {
		req := &http.Request{Method: "GET", URL: &url.URL{Path: path, RawQuery: "q=x"}}
		assert.Equal(t, route{"GET", path}, routeOf(req), "the method and the path, not the query")
	}
}

func TestResourcesLearn(t *testing.T) {
	var r resources
	assert.True(t, r.learn(route{"GET", "/repos/octocat/x"}, ""))
	assert.False(t, r.named.Load(), "the scope's own names nothing")
	assert.True(t, r.learn(route{"GET", "/search/code"}, "code_search"))
	assert.True(t, r.learn(route{"GET", "/search/issues"}, "search"))
	assert.Equal(t, "code_search", r.of(route{"GET", "/search/code"}))
	assert.Equal(t, "search", r.of(route{"GET", "/search/issues"}))
	assert.Equal(t, "", r.of(route{"GET", "/repos/octocat/x"}))
	assert.ElementsMatch(t, []string{"code_search", "search"}, r.all())
	assert.True(t, r.learn(route{"GET", "/search/issues"}, ""))
	assert.Equal(t, "", r.of(route{"GET", "/search/issues"}), "a route that moves back")
	for i := range maxResourceRoutes + 10 {
		r.learn(route{"GET", "/x/" + strconv.Itoa(i)}, "x")
	}
	r.mu.Lock()
	assert.Len(t, r.routes, maxResourceRoutes, "bounded")
	r.mu.Unlock()
	assert.False(t, r.learn(route{"GET", "/y"}, "y"), "past the cap, a new route is not learned")
	assert.True(t, r.learn(route{"GET", "/search/code"}, "search"), "a known route still moves")
	assert.Equal(t, "", resourceOf(&http.Response{Header: http.Header{"X-Ratelimit-Resource": {string(make([]byte, 65))}}}), "overlong")
	assert.Equal(t, "", resourceOf(&http.Response{Header: http.Header{"X-Ratelimit-Resource": {"a", "b"}}}), "repeated")
	assert.Equal(t, "search", resourceOf(&http.Response{Header: http.Header{"X-Ratelimit-Resource": {" search "}}}))
}

// FuzzRouteOf: a route is the method and the path, and resourceOf reads a
// name of at most 64 bytes. The seed corpus is testdata/fuzz/FuzzRouteOf.
func FuzzRouteOf(f *testing.F) {
	f.Add("/search/code", " search ")
	f.Add("/repos/octocat/hello-world/issues", "core")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, path, name string) {
		if got := routeOf(&http.Request{Method: "GET", URL: &url.URL{Path: path}}); got != (route{"GET", path}) {
			t.Fatalf("routeOf(%q) = %v", path, got)
		}
		if n := resourceOf(&http.Response{Header: http.Header{"X-Ratelimit-Resource": {name}}}); len(n) > 64 {
			t.Fatalf("resourceOf(%q) = %q", name, n)
		}
	})
}
