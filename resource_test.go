package heed_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// githubRT answers as GitHub does, counting search and code search
// against limits of their own (x-ratelimit-resource): a resource listed in
// spent answers 403 with remaining 0 and its reset 60 s ahead; the rest
// 200, publishing what they have left.
type githubRT struct {
	mu    sync.Mutex
	spent map[string]bool
	sends []string // "resource path" of every request
	// noResource, when set, is answered first to the next request: a 503
	// with Retry-After and no x-ratelimit-resource.
	noResource bool
}

func resourceOfPath(path string) string {
	switch {
	case strings.HasPrefix(path, "/search/code"):
		return "code_search"
	case strings.HasPrefix(path, "/search/"):
		return "search"
	}
	return "core"
}

func (g *githubRT) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	res := resourceOfPath(r.URL.Path)
	g.sends = append(g.sends, res+" "+r.URL.Path)
	h := hdr("Content-Type", ctJSON, "X-RateLimit-Resource", res, "X-RateLimit-Limit", "30",
		"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(60*time.Second).Unix(), 10))
	status, body := 200, `{}`
	switch {
	case g.noResource:
		g.noResource = false
		return &http.Response{StatusCode: 503, Header: hdr("Retry-After", "5"), Body: http.NoBody, Request: r}, nil
	case g.spent[res]:
		h.Set("X-RateLimit-Remaining", "0")
		status, body = 403, `{"message":"API rate limit exceeded"}`
	default:
		h.Set("X-RateLimit-Remaining", "20")
	}
	return &http.Response{StatusCode: status, Header: h, Body: readCloser(body), Request: r}, nil
}

func (g *githubRT) sent() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.sends...)
}

func readCloser(s string) *trackedBody { return &trackedBody{Reader: strings.NewReader(s)} }

// get sends GET path through tr with a budget of d, and returns the status,
// or 0 and the error.
func get(t *testing.T, tr *heed.Transport, path string, d time.Duration) (int, error) {
	ctx := withDeadline(t, t.Context(), d)
	resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "https://api.github.com"+path, nil))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// TestResourcesHoldOnlyTheirOwn: a spent search limit holds search calls,
// not core calls to the same host, nor code search; learned whether the
// search route was met before or the throttle is its first answer.
func TestResourcesHoldOnlyTheirOwn(t *testing.T) {
	for _, learnedFirst := range []bool{true, false} {
		t.Run("search learned first: "+strconv.FormatBool(learnedFirst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gh := &githubRT{spent: map[string]bool{}}
				tr := heed.New(gh, heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
				if learnedFirst {
					status, err := get(t, tr, "/search/issues?q=a", time.Second)
					require.NoError(t, err)
					require.Equal(t, 200, status)
				}
				gh.mu.Lock()
				gh.spent["search"] = true
				gh.mu.Unlock()
				status, err := get(t, tr, "/search/issues?q=b", time.Second)
				require.NoError(t, err)
				require.Equal(t, 403, status, "the search limit is spent")

				start := time.Now()
				status, err = get(t, tr, "/repos/octocat/hello-world", time.Second)
				require.NoError(t, err)
				assert.Equal(t, 200, status, "core is not held by search")
				status, err = get(t, tr, "/search/code?q=x", time.Second)
				require.NoError(t, err)
				assert.Equal(t, 200, status, "code search is not held by search")
				assert.Zero(t, time.Since(start), "neither waited")

				_, err = get(t, tr, "/search/issues?q=c", time.Second)
				var de *heed.DeferredError
				require.True(t, errors.As(err, &de), "search is held: %v", err)
				assert.Zero(t, de.Attempts, "deferred at the gate, unsent")
				assert.WithinDuration(t, start.Add(60*time.Second), de.RetryAt, time.Second)
			})
		})
	}
}

// TestResourceQuotaStaysItsOwn: what a search response publishes of the
// search limit (remaining 0, its reset) is not counted against core.
func TestResourceQuotaStaysItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gh := &githubRT{spent: map[string]bool{}}
		tr := heed.New(gh, heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
		status, err := get(t, tr, "/search/issues?q=a", time.Second)
		require.NoError(t, err)
		require.Equal(t, 200, status)
		for i := range 3 {
			status, err := get(t, tr, "/user/repos?page="+strconv.Itoa(i), time.Second)
			require.NoError(t, err)
			assert.Equal(t, 200, status)
		}
		gh.mu.Lock()
		gh.spent["search"] = true
		gh.mu.Unlock()
		_, _ = get(t, tr, "/search/issues?q=b", time.Second)
		start := time.Now()
		for i := range 3 {
			status, err := get(t, tr, "/user/repos?page="+strconv.Itoa(i+3), time.Second)
			require.NoError(t, err)
			assert.Equal(t, 200, status)
		}
		assert.Zero(t, time.Since(start), "core goes on at once")
	})
}

// TestHoldNamingNoResourceHoldsThemAll: a throttle that names no resource
// (a 503 from in front of the API) holds every resource of the scope.
func TestHoldNamingNoResourceHoldsThemAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gh := &githubRT{spent: map[string]bool{}}
		tr := heed.New(gh, heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
		for _, p := range []string{"/search/issues?q=a", "/search/code?q=a", "/repos/octocat/x"} {
			status, err := get(t, tr, p, time.Second)
			require.NoError(t, err)
			require.Equal(t, 200, status)
		}
		gh.mu.Lock()
		gh.noResource = true
		gh.mu.Unlock()
		status, err := get(t, tr, "/repos/octocat/x", time.Second)
		require.NoError(t, err)
		require.Equal(t, 503, status)
		for _, p := range []string{"/search/issues?q=b", "/search/code?q=b", "/repos/octocat/y", "/users/octocat"} {
			_, err := get(t, tr, p, time.Second)
			var de *heed.DeferredError
			assert.True(t, errors.As(err, &de), "%s is held too: %v", p, err)
		}
		assert.Len(t, gh.sent(), 4, "nothing more was sent")
	})
}

func ghResp(r *http.Request, status int, res, remaining string, reset time.Time, extra ...string) *http.Response {
	h := hdr("Content-Type", ctJSON, "X-RateLimit-Resource", res, "X-RateLimit-Remaining", remaining,
		"X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: readCloser(`{}`), Request: r}
}

// TestFirstNamedResourceQuotaHoldsIt: a served response that names a
// resource a first time, with that resource spent, holds that resource
// until its reset: the route's next request is not sent before it.
func TestFirstNamedResourceQuotaHoldsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		sends := 0
		reset := time.Now().Add(60 * time.Second)
		tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sends++
			mu.Unlock()
			return ghResp(r, 200, "search", "0", reset), nil
		}), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
		status, err := get(t, tr, "/search/issues?q=a", time.Second)
		require.NoError(t, err)
		require.Equal(t, 200, status)
		_, err = get(t, tr, "/search/issues?q=b", time.Second)
		var de *heed.DeferredError
		assert.True(t, errors.As(err, &de), "search is spent until its reset 60 s ahead: %v", err)
		assert.Equal(t, 1, sends, "sent before the reset the server gave")
	})
}

// TestRetryMovesToTheResourceNamed: a call whose first answer names another
// resource sends its retries in that resource, so a hold on it set
// meanwhile, by another request's answer, holds them too.
func TestRetryMovesToTheResourceNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var repoSends []time.Time
		searchResetAt := time.Now().Add(60 * time.Second)
		learned := false
		tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.URL.Path {
			case "/search/issues":
				mu.Lock()
				first := !learned
				learned = true
				mu.Unlock()
				if first {
					return ghResp(r, 200, "search", "20", searchResetAt), nil
				}
				time.Sleep(500 * time.Millisecond) // in flight
				return ghResp(r, 403, "search", "0", searchResetAt), nil
			default: // /search/repositories, a route not yet learned
				mu.Lock()
				repoSends = append(repoSends, time.Now())
				n := len(repoSends)
				mu.Unlock()
				if n == 1 { // secondary limit: retry-after 1
					return ghResp(r, 403, "search", "10", searchResetAt, "Retry-After", "1"), nil
				}
				return ghResp(r, 200, "search", "9", searchResetAt), nil
			}
		}), heed.WithPolicy(heed.Policy{MaxAttempts: 3}))
		_, err := get(t, tr, "/search/issues?q=learn", time.Second)
		require.NoError(t, err)

		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = get(t, tr, "/search/issues?q=b", 2*time.Second) }) // 403 at +0.5 s: search held to +60 s
		synctest.Wait()                                                          // q=b is in flight
		_, err = get(t, tr, "/search/repositories?q=a", 5*time.Second)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, at := range repoSends[1:] {
			assert.False(t, at.Before(searchResetAt), "search retry sent at +%v, search held to +60s", at.Sub(start))
		}
		var de *heed.DeferredError
		assert.True(t, errors.As(err, &de), "should defer: %v", err)
	})
}

// TestRouteMovingBackToCoreIsHeldByCore: a route learned as search whose
// answer now names core is core's again: its throttle holds core.
func TestRouteMovingBackToCoreIsHeldByCore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		moved := false
		var coreSends int
		reset := time.Now().Add(60 * time.Second)
		tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Path == "/search/issues" && !moved {
				moved = true
				return ghResp(r, 200, "search", "20", reset), nil
			}
			if r.URL.Path != "/search/issues" {
				coreSends++
			}
			// core is spent; /search/issues now counts against core
			return ghResp(r, 403, "core", "0", reset), nil
		}), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
		_, err := get(t, tr, "/search/issues?q=a", time.Second)
		require.NoError(t, err)
		status, err := get(t, tr, "/search/issues?q=b", time.Second)
		require.NoError(t, err)
		require.Equal(t, 403, status, "core is spent until +60 s")
		_, err = get(t, tr, "/repos/octocat/x", time.Second)
		var de *heed.DeferredError
		assert.True(t, errors.As(err, &de), "core is held: %v", err)
		assert.Zero(t, coreSends, "a core request was sent into a spent core limit")
	})
}

// TestFirstSearchThrottleDoesNotPaceCore: the first search throttle of a
// route not yet learned teaches core's pace nothing, learned first or not.
func TestFirstSearchThrottleDoesNotPaceCore(t *testing.T) {
	for _, learnedFirst := range []bool{true, false} {
		t.Run("learned first: "+strconv.FormatBool(learnedFirst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var mu sync.Mutex
				searchSpent := false
				reset := time.Now().Add(30 * time.Second)
				tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if strings.HasPrefix(r.URL.Path, "/search/") {
						mu.Lock()
						spent := searchSpent
						mu.Unlock()
						if spent {
							return ghResp(r, 403, "search", "0", reset), nil
						}
						return ghResp(r, 200, "search", "20", reset), nil
					}
					if r.URL.Path == "/repos/octocat/slow" {
						<-release
					}
					return ghResp(r, 200, "core", "4000", time.Now().Add(time.Hour)), nil
				}), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
				if learnedFirst {
					_, err := get(t, tr, "/search/issues?q=learn", time.Second)
					require.NoError(t, err)
				}
				mu.Lock()
				searchSpent = true
				mu.Unlock()
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(func() { _, _ = get(t, tr, "/repos/octocat/slow", 10*time.Second) })
				}
				synctest.Wait()
				status, err := get(t, tr, "/search/issues?q=b", time.Second)
				require.NoError(t, err)
				require.Equal(t, 403, status)
				close(release)
				wg.Wait()
				start := time.Now()
				for i := range 20 {
					status, err := get(t, tr, "/repos/octocat/x?i="+strconv.Itoa(i), 100*time.Millisecond)
					require.NoError(t, err, "core request %d held by a search throttle", i)
					require.Equal(t, 200, status)
				}
				assert.Zero(t, time.Since(start), "core not paced by search")
			})
		})
	}
}

// TestPerRepositoryResourceHoldsOnlyItsRoute: a resource GitHub counts per
// endpoint (code_scanning_upload, for one repository's uploads) holds that
// route, not the owner's other POSTs, which are core's.
func TestPerRepositoryResourceHoldsOnlyItsRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reset := time.Now().Add(60 * time.Second)
		var mu sync.Mutex
		coreSends, uploads := 0, 0
		tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/code-scanning/sarifs") {
				mu.Lock()
				uploads++
				n := uploads
				mu.Unlock()
				if n == 1 {
					return ghResp(r, 202, "code_scanning_upload", "1", reset), nil
				}
				return ghResp(r, 403, "code_scanning_upload", "0", reset), nil
			}
			mu.Lock()
			coreSends++
			mu.Unlock()
			return ghResp(r, 201, "core", "4000", time.Now().Add(time.Hour)), nil
		}), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
		post := func(path string) (*http.Response, error) {
			ctx := withDeadline(t, t.Context(), time.Second)
			return tr.RoundTrip(newRequest(t, ctx, "POST", "https://api.github.com"+path, nil))
		}
		for range 2 { // learned, then spent
			resp, err := post("/repos/octocat/a/code-scanning/sarifs")
			require.NoError(t, err)
			resp.Body.Close()
		}
		resp, err := post("/repos/octocat/b/issues")
		require.NoError(t, err, "a core POST is held by code_scanning_upload")
		resp.Body.Close()
		assert.Equal(t, 1, coreSends)
	})
}

// TestPastTheRouteCapTheScopeIsHeld: past the routes a scope learns, a
// route's answers count in the scope itself, so its spent limit still
// holds it.
func TestPastTheRouteCapTheScopeIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reset := time.Now().Add(60 * time.Second)
		var mu sync.Mutex
		spentSends := 0
		tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/search/spent" {
				mu.Lock()
				spentSends++
				mu.Unlock()
				return ghResp(r, 403, "search", "0", reset), nil
			}
			return ghResp(r, 200, "search", "4000", reset), nil
		}), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))
		for i := range 256 { // the cap
			_, err := get(t, tr, "/search/r"+strconv.Itoa(i), time.Second)
			require.NoError(t, err)
		}
		for range 3 {
			_, _ = get(t, tr, "/search/spent", time.Second)
		}
		assert.Equal(t, 1, spentSends, "a spent search route is sent again and again within its hold")
	})
}
