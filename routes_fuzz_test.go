package heed

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// memOK answers 200 with no body, from memory.
type memOK struct{ sent int }

func (m *memOK) RoundTrip(r *http.Request) (*http.Response, error) {
	m.sent++
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// newPanics reports the value New panicked with, or nil.
func newPanics(opts ...Option) (tr *Transport, panicked any) {
	defer func() { panicked = recover() }()
	return New(&memOK{}, opts...), nil
}

// FuzzRoutes fuzzes two route patterns and a request (method, host, path).
// Properties: compileRoutes never panics and reports a bad pattern as an
// error; New panics exactly when compileRoutes fails, with that error (the
// documented behaviour: routes are configuration, as with ServeMux.Handle);
// with valid routes, matching and RoundTrip never panic, pick one of the
// routes or the default, and give the same answer from the cache as from
// the mux.
func FuzzRoutes(f *testing.F) {
	f.Add("/jobs/{id}", "POST /create/", "GET", "api.example", "/jobs/7")
	f.Add("GET api.example/v1/", "/v1/{rest...}", "GET", "api.example", "/v1/a/../b")
	f.Add("/a/{x}/{x}", "", "GET", "h", "/a/b/c")
	f.Add("/a/", "/a/", "GET", "h", "/a/")
	f.Add("/{$}", "/x/{y...}", "HEAD", "h:8080", "//x//y/")
	f.Add("GET", "", "GET", "", "")
	f.Add("", "/", "CONNECT", "h", "/")
	f.Add("/a/{", "", "GET", "h", "/a/")
	f.Add("POST /upload/{id}/parts/{n}", "PUT /upload/{id}/parts/{n}", "PUT", "uploads.example", "/upload/1/parts/2")
	f.Add("/%2F/{x}", "/ü/", "G ET", "h\x00", "/%2F/\xff")
	f.Fuzz(func(t *testing.T, p1, p2, method, host, path string) {
		specs := []routeSpec{{p1, Policy{Name: "one"}}}
		opts := []Option{WithRoute(p1, Policy{Name: "one"})}
		if p2 != "" {
			specs = append(specs, routeSpec{p2, Policy{Name: "two"}})
			opts = append(opts, WithRoute(p2, Policy{Name: "two"}))
		}
		r, err := compileRoutes(specs)
		tr, panicked := newPanics(opts...)
		if err != nil {
			if panicked == nil {
				t.Fatalf("compileRoutes: %v, but New did not panic", err)
			}
			if perr, ok := panicked.(error); !ok || perr.Error() != err.Error() || !strings.HasPrefix(perr.Error(), "heed: route ") {
				t.Fatalf("New panicked with %v, compileRoutes said %v", panicked, err)
			}
			return
		}
		if panicked != nil {
			t.Fatalf("New panicked on patterns compileRoutes accepts: %v", panicked)
		}

		req := &http.Request{
			Method: method,
			URL:    &url.URL{Scheme: "http", Host: host, Path: path},
			Host:   host,
			Header: http.Header{},
		}
		p := r.match(req)
		if p != nil && p.name != "one" && p.name != "two" {
			t.Fatalf("matched policy %q", p.name)
		}
		if again := r.match(req); again != p {
			t.Fatalf("cache gave %v, mux gave %v", again, p)
		}
		if method == http.MethodConnect {
			// CONNECT is a tunnel, not a route: it takes the default policy.
			if p != nil {
				t.Fatalf("CONNECT matched %q", p.name)
			}
		} else if fresh := r.lookup(req, routeKey{cmp.Or(method, http.MethodGet), host, req.URL.EscapedPath()}); fresh != p {
			t.Fatalf("lookup gave %v, match gave %v", fresh, p)
		}
		got := tr.policyFor(req).public.Name
		if want := "default"; p != nil {
			want = p.name
			if got != want {
				t.Fatalf("Transport picked %q, routes %q", got, want)
			}
		} else if got != want {
			t.Fatalf("Transport picked %q with no route", got)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("RoundTrip: %v, %v", resp, err)
		}
	})
}

// TestRoutesPanicIsTheDocumentedOne: New's panic on a bad pattern carries
// the pattern, as ServeMux.Handle's does.
func TestRoutesPanicIsTheDocumentedOne(t *testing.T) {
	for _, p := range []string{"", "GET", "/a/{", "/{x}/{x}", "/a/{x...}/b"} {
		_, panicked := newPanics(WithRoute(p, Policy{}))
		if panicked == nil {
			t.Fatalf("pattern %q: no panic", p)
		}
		if !strings.Contains(fmt.Sprint(panicked), fmt.Sprintf("%q", p)) {
			t.Fatalf("pattern %q: panic %v does not name it", p, panicked)
		}
	}
}
