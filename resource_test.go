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
