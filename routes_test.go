package heed_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

func TestRoutesUseServeMuxPrecedence(t *testing.T) {
	tests := []struct {
		method, url, want string
	}{
		{"GET", "https://x.example/", "root"},
		{"GET", "https://x.example/other", "root"},
		{"GET", "https://x.example/v1/models", "v1"},
		{"POST", "https://x.example/v1/images/gen", "POST /v1/images/"},
		{"GET", "https://x.example/v1/images/gen", "v1"},
		{"GET", "https://api.openai.example/v1/models", "openai"},
		{"GET", "https://api.openai.example:443/v1/models", "openai"},
		{"GET", "https://x.example/v1/jobs/42", "job status"},
		{"HEAD", "https://x.example/v1/jobs/42", "job status"},
		{"DELETE", "https://x.example/v1/jobs/42", "v1"},
		{"GET", "https://x.example/v1/files/a/b/c.png", "files"},
		{"GET", "https://x.example/v1/../v1/jobs/7", "job status"},
		{"GET", "https://x.example/v1/jobs/7?page=2", "job status"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := script(tooMany("Retry-After", "600"))
				tr := heed.New(inner, routeOptions()...)
				_, err := tr.RoundTrip(newRequest(t, t.Context(), tt.method, tt.url, nil))
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, tt.want, de.Route)
			})
		})
	}
}

// routeOptions are the routes of TestRoutesUseServeMuxPrecedence.
func routeOptions() []heed.Option {
	return []heed.Option{
		heed.WithPolicy(heed.Policy{Name: "fallback"}),
		heed.WithRoute("/", heed.Policy{Name: "root"}),
		heed.WithRoute("/v1/", heed.Policy{Name: "v1"}),
		heed.WithRoute("POST /v1/images/", heed.Policy{}),
		heed.WithRoute("api.openai.example/v1/", heed.Policy{Name: "openai"}),
		heed.WithRoute("GET /v1/jobs/{id}", heed.Policy{Name: "job status"}),
		heed.WithRoute("/v1/files/{path...}", heed.Policy{Name: "files"}),
	}
}

func TestNoRouteUsesDefaultPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := heed.New(script(tooMany("Retry-After", "600")), heed.WithRoute("/only/", heed.Policy{Name: "only"}))
		_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://x.example/else", nil))
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "default", de.Route)
	})
}

func TestRoutesDoNotInherit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(boom500)
		tr := heed.New(rt,
			heed.WithPolicy(heed.Policy{MaxAttempts: 2, Backoff: heed.Constant(time.Second)}),
			heed.WithRoute("/r/", heed.Policy{Backoff: heed.Constant(time.Second)}),
		)
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://x.example/r/1", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Len(t, rt.requests(), heed.DefaultMaxAttempts, "a zero MaxAttempts on a route means the package default, not the WithPolicy value")
	})
}

func TestInvalidRoutePanics(t *testing.T) {
	for _, p := range []string{"", "GET", "/a/{", "/dup/"} {
		t.Run(p, func(t *testing.T) {
			assert.Panics(t, func() {
				heed.New(nil, heed.WithRoute("/dup/", heed.Policy{}), heed.WithRoute(p, heed.Policy{}))
			})
		})
	}
}

// TestRoutesMatchTheEscapedPath pins that an encoded slash is part of a
// segment, as ServeMux has it, and that the route cache keeps paths that
// decode alike apart: a key-less POST to /v1/files/a%2Fb matches the route
// that never resends it, whether or not /v1/files/a/b was matched first.
func TestRoutesMatchTheEscapedPath(t *testing.T) {
	tests := []struct {
		name  string
		warm  []string // paths POSTed before, with a 200
		path  string
		sends int
		route string
	}{
		{"encoded slash, cold cache", nil, "/v1/files/a%2Fb", 1, "POST /v1/files/{id}"},
		{"encoded slash after the decoded form", []string{"/v1/files/a/b"}, "/v1/files/a%2Fb", 1, "POST /v1/files/{id}"},
		{"decoded form after the encoded slash", []string{"/v1/files/a%2Fb"}, "/v1/files/a/b", heed.DefaultMaxAttempts, "POST /v1/files/{dir}/{id}"},
		{"lower-case escape", []string{"/v1/files/a/b"}, "/v1/files/a%2fb", 1, "POST /v1/files/{id}"},
		{"encoded slash in an unclean path", []string{"/v1/files/a/b"}, "/v1/x/../files/a%2Fb", 1, "POST /v1/files/{id}"},
		{"two encoded slashes", []string{"/v1/files/a/b/c"}, "/v1/files/a%2Fb%2Fc", 1, "POST /v1/files/{id}"},
		{"one of two slashes encoded", []string{"/v1/files/a/b"}, "/v1/files/a%2Fb/c", heed.DefaultMaxAttempts, "POST /v1/files/{dir}/{id}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := &fakeRT{}
				tr := heed.New(rt,
					heed.WithRoute("POST /v1/files/{id}", heed.Policy{Budget: heed.Budget{Disabled: true}}),
					heed.WithRoute("POST /v1/files/{dir}/{id}", heed.Policy{RetryUnsafe: true, Backoff: heed.Constant(time.Second), Budget: heed.Budget{Disabled: true}}),
				)
				rt.replies = []reply{ok200}
				for _, p := range tt.warm {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "https://store.example"+p, nil))
					require.NoError(t, err)
					resp.Body.Close()
				}
				warmed := len(rt.requests())
				rt.mu.Lock()
				rt.replies = []reply{{status: 502, body: "bad gateway"}}
				rt.sent, rt.bodies = nil, nil
				rt.mu.Unlock()
				require.Equal(t, len(tt.warm), warmed)

				req := newRequest(t, t.Context(), "POST", "https://store.example"+tt.path, nil)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, 502, resp.StatusCode)
				assert.Len(t, rt.requests(), tt.sends, "sends of a key-less POST to %s", tt.path)
				assert.Equal(t, tt.route, policyOf(tr, req).Name)
			})
		})
	}
}

// TestRoutesMatchWhatTheServerMatches: heed picks the route a ServeMux with
// the same patterns picks for the request as it arrives, over loopback,
// for escaped, opaque and method-less requests alike.
func TestRoutesMatchWhatTheServerMatches(t *testing.T) {
	patterns := []string{"POST /v1/files/{id}", "POST /v1/files/{dir}/{id}", "GET /v1/jobs/{id}", "/v1/", "/"}
	mux := http.NewServeMux()
	var opts []heed.Option
	for _, p := range patterns {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Pattern", r.Pattern) })
		opts = append(opts, heed.WithRoute(p, heed.Policy{Name: p, MaxAttempts: 1}))
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	tr := heed.New(srv.Client().Transport, opts...)

	tests := []struct {
		name   string
		method string
		url    *url.URL
	}{
		{"encoded slash", "POST", &url.URL{Scheme: "http", Host: addr, Path: "/v1/files/a/b", RawPath: "/v1/files/a%2Fb"}},
		{"two segments", "POST", &url.URL{Scheme: "http", Host: addr, Path: "/v1/files/a/b"}},
		{"opaque with an encoded slash", "POST", &url.URL{Scheme: "http", Host: addr, Opaque: "/v1/files/a%2Fb"}},
		{"opaque, two segments", "POST", &url.URL{Scheme: "http", Host: addr, Opaque: "/v1/files/a/b"}},
		{"opaque with a host", "POST", &url.URL{Scheme: "http", Host: addr, Opaque: "//" + addr + "/v1/files/a%2Fb"}},
		{"opaque with a host, two segments", "POST", &url.URL{Scheme: "http", Host: addr, Opaque: "//" + addr + "/v1/files/x/y"}},
		{"no method means GET", "", &url.URL{Scheme: "http", Host: addr, Path: "/v1/jobs/7"}},
		{"GET", "GET", &url.URL{Scheme: "http", Host: addr, Path: "/v1/jobs/7"}},
		{"escaped job id", "GET", &url.URL{Scheme: "http", Host: addr, Path: "/v1/jobs/a/b", RawPath: "/v1/jobs/a%2Fb"}},
		{"root", "GET", &url.URL{Scheme: "http", Host: addr, Path: "/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := (&http.Request{Method: tt.method, URL: tt.url, Header: http.Header{}, Host: addr}).WithContext(t.Context())
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
			served := resp.Header.Get("X-Pattern")
			require.NotEmpty(t, served)
			assert.Equal(t, served, policyOf(tr, req).Name, "heed's route is the server's")
		})
	}
}

// Routes do not inherit from WithPolicy: every zero field is the package
// default.
func TestDesignRoutesDoNotInheritAnyField(t *testing.T) {
	alwaysTerminal := func(*http.Request, *http.Response, error) heed.Verdict {
		return heed.Verdict{Class: heed.Terminal, Reason: "no"}
	}
	tests := []struct {
		name     string
		def      heed.Policy
		method   string
		deadline time.Duration
		replies  []reply
		check    func(t *testing.T, rt *fakeRT, gate heed.Gate, resp *http.Response, err error)
	}{
		{"Name", heed.Policy{Name: "fallback"}, "GET", 10 * time.Second, []reply{tooMany("Retry-After", "600")},
			func(t *testing.T, _ *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, "/r/", de.Route)
			}},
		{"MaxAttempts", heed.Policy{MaxAttempts: 2}, "GET", 0, []reply{boom500},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				assert.Len(t, rt.requests(), heed.DefaultMaxAttempts)
			}},
		{"MaxElapsed", heed.Policy{MaxElapsed: 2 * time.Second}, "GET", 0, []reply{tooMany("Retry-After", "4"), ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				assert.Equal(t, []time.Duration{4 * time.Second}, rt.gaps())
			}},
		{"MaxWait", heed.Policy{MaxWait: 5 * time.Second}, "GET", 0, []reply{tooMany("Retry-After", "30"), ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				assert.Equal(t, []time.Duration{30 * time.Second}, rt.gaps())
			}},
		{"MinWait", heed.Policy{MinWait: 10 * time.Second}, "GET", 0, []reply{tooMany("Retry-After", "0"), ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				assert.Equal(t, []time.Duration{heed.DefaultMinWait}, rt.gaps())
			}},
		{"Backoff", heed.Policy{Backoff: heed.Constant(20 * time.Second)}, "GET", 0, []reply{boom500, ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				g := rt.gaps()
				require.Len(t, g, 1)
				assert.GreaterOrEqual(t, g[0], 500*time.Millisecond, "EqualJitter(1s, 30s), first retry")
				assert.LessOrEqual(t, g[0], time.Second)
			}},
		{"Jitter", heed.Policy{Jitter: 10 * time.Second}, "GET", 0, []reply{tooMany("Retry-After", "2"), ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				assert.Equal(t, []time.Duration{2 * time.Second}, rt.gaps())
			}},
		{"Reserve", heed.Policy{Reserve: 10 * time.Second}, "GET", 5 * time.Second, []reply{tooMany("Retry-After", "4"), ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				assert.Equal(t, []time.Duration{4 * time.Second}, rt.gaps())
			}},
		{"Classify", heed.Policy{Classify: alwaysTerminal}, "GET", 0, []reply{boom500, ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, resp *http.Response, err error) {
				require.NoError(t, err)
				assert.Equal(t, 200, resp.StatusCode)
				assert.Len(t, rt.requests(), 2)
			}},
		{"Scope", heed.Policy{Scope: "shared"}, "GET", 0, []reply{tooMany("Retry-After", "5"), ok200},
			func(t *testing.T, _ *fakeRT, gate heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				nb, _ := gate.NotBefore(context.Background(), "shared")
				assert.True(t, nb.IsZero(), "the WithPolicy scope is not used")
				nb, _ = gate.NotBefore(context.Background(), "x.example")
				assert.False(t, nb.IsZero(), "the request's host is the scope")
			}},
		{"KeyHeader", heed.Policy{KeyHeader: "Idempotency-Key"}, "POST", 0, []reply{ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, _ *http.Response, err error) {
				require.NoError(t, err)
				assert.Empty(t, rt.requests()[0].header.Get("Idempotency-Key"))
			}},
		{"RetryUnsafe", heed.Policy{RetryUnsafe: true}, "POST", 0, []reply{boom500, ok200},
			func(t *testing.T, rt *fakeRT, _ heed.Gate, resp *http.Response, err error) {
				require.NoError(t, err)
				assert.Equal(t, 500, resp.StatusCode)
				assert.Len(t, rt.requests(), 1)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tt.replies...)
				gate := heed.NewGate()
				tr := heed.New(rt, heed.WithGate(gate), heed.WithPolicy(tt.def), heed.WithRoute("/r/", heed.Policy{}))
				ctx := withDeadline(t, t.Context(), tt.deadline)
				resp, err := tr.RoundTrip(newRequest(t, ctx, tt.method, "https://x.example/r/1", nil))
				tt.check(t, rt, gate, resp, err)
				if resp != nil {
					resp.Body.Close()
				}
			})
		})
	}
}
