package heed_test

import (
	"context"
	"errors"
	"io"
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

// namedStep is one request of a server-named scopes run: what the server
// answers it, should it arrive, and what the caller must see.
type namedStep struct {
	method, path string
	status       int
	header       func(now time.Time) http.Header // the answer's header; nil: none
	want         string                          // "served", "deferred" (sent, then deferred) or "gate" (deferred unsent)
	after        time.Duration                   // the fake clock moves this far before the request
}

// namedAPI answers each request with the current step's answer, and
// records the paths it got.
type namedAPI struct {
	mu   sync.Mutex
	step namedStep
	got  []string
}

func (a *namedAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, r.Method+" "+r.URL.Path)
	h := http.Header{}
	if a.step.header != nil {
		h = a.step.header(time.Now())
	}
	return &http.Response{StatusCode: a.step.status, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// github is a GitHub answer naming resource, with remaining calls of
// limit left until reset from now.
func github(resource string, remaining int, reset time.Duration) func(time.Time) http.Header {
	return func(now time.Time) http.Header {
		return http.Header{
			"X-Ratelimit-Limit":     {"5000"},
			"X-Ratelimit-Remaining": {strconv.Itoa(remaining)},
			"X-Ratelimit-Reset":     {strconv.FormatInt(now.Add(reset).Unix(), 10)},
			"X-Ratelimit-Resource":  {resource},
		}
	}
}

// discord is a Discord answer of bucket (none when ""), with remaining
// left for resetAfter; a 429's carries Retry-After, and global marks the
// limit of every route.
func discord(bucket string, remaining int, resetAfter time.Duration, global bool) func(time.Time) http.Header {
	return func(time.Time) http.Header {
		h := http.Header{
			"X-Ratelimit-Limit":       {"5"},
			"X-Ratelimit-Remaining":   {strconv.Itoa(remaining)},
			"X-Ratelimit-Reset-After": {strconv.FormatFloat(resetAfter.Seconds(), 'f', 3, 64)},
		}
		if bucket != "" {
			h.Set("X-Ratelimit-Bucket", bucket)
			h.Set("X-Ratelimit-Scope", "user")
		}
		if remaining == 0 {
			h.Set("Retry-After", strconv.Itoa(int(resetAfter.Seconds())))
		}
		if global {
			h = http.Header{"Retry-After": {strconv.Itoa(int(resetAfter.Seconds()))}, "X-Ratelimit-Global": {"true"}, "X-Ratelimit-Scope": {"global"}}
		}
		return h
	}
}

// TestServerNamedScopes: a limit the server names (GitHub's resource,
// Discord's bucket per channel or guild) holds only the requests it counts,
// once heed has seen their shape answered with its name; a throttle that
// names no limit, or Discord's global one, holds every request of the
// host. MaxWait is a second, so every hold longer defers: a request held
// is deferred at the gate, unsent.
func TestServerNamedScopes(t *testing.T) {
	for _, tc := range namedRuns() {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &namedAPI{}
				tr := heed.New(api, heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
				runNamed(t, api, tc.steps, func(int) http.RoundTripper { return tr })
			})
		})
	}
}

// namedRuns are the server-named scopes runs: GitHub's resources, and
// Discord's buckets.
func namedRuns() []struct {
	name  string
	steps []namedStep
} {
	return []struct {
		name  string
		steps []namedStep
	}{
		{"GitHub resources", []namedStep{
			{method: "GET", path: "/repos/o/r/issues", status: 200, header: github("core", 4999, time.Hour), want: "served"},
			{method: "GET", path: "/graphql", status: 200, header: github("graphql", 4999, time.Hour), want: "served"},
			{method: "GET", path: "/search/issues", status: 200, header: github("search", 9, time.Minute), want: "served"},
			{method: "GET", path: "/search/issues", status: 403, header: github("search", 0, time.Minute), want: "deferred"},
			{method: "GET", path: "/search/issues", want: "gate"},
			{method: "GET", path: "/repos/o/r/issues", status: 200, header: github("core", 4998, time.Hour), want: "served"},
			{method: "GET", path: "/repos/o/r/issues/12", status: 200, header: github("core", 4997, time.Hour), want: "served"},
			// A spent core holds core calls, and a shape never answered,
			// which counts against core, the resource named most.
			{method: "GET", path: "/repos/o/r/pulls", status: 200, header: github("core", 0, 30*time.Second), want: "served"},
			{method: "GET", path: "/repos/o/r/issues", want: "gate"},
			{method: "GET", path: "/repos/o/r/pulls", want: "gate"},
			{method: "GET", path: "/repos/another/repo/issues", want: "gate"},
			{method: "GET", path: "/graphql", status: 200, header: github("graphql", 4998, time.Hour), want: "served"},
			{method: "GET", path: "/search/issues", want: "gate"},
			{after: 61 * time.Second, method: "GET", path: "/search/issues", status: 200, header: github("search", 29, time.Minute), want: "served"},
			{method: "GET", path: "/repos/o/r/issues", status: 200, header: github("core", 4999, time.Hour), want: "served"},
			// A throttle that names no limit holds the host, every named
			// scope in it.
			{method: "GET", path: "/graphql", status: 429, header: func(time.Time) http.Header { return http.Header{"Retry-After": {"30"}} }, want: "deferred"},
			{method: "GET", path: "/repos/o/r/issues", want: "gate"},
			{method: "GET", path: "/search/issues", want: "gate"},
			{after: 31 * time.Second, method: "GET", path: "/repos/o/r/issues", status: 200, header: github("core", 4998, time.Hour), want: "served"},
		}},
		{"Discord buckets", []namedStep{
			{method: "POST", path: "/channels/1/messages", status: 200, header: discord("abcd", 4, 5*time.Second, false), want: "served"},
			{method: "POST", path: "/channels/1/messages", status: 429, header: discord("abcd", 0, 5*time.Second, false), want: "deferred"},
			{method: "POST", path: "/channels/1/messages", want: "gate"},
			// The same bucket, another channel: a limit of its own.
			{method: "POST", path: "/channels/2/messages", status: 200, header: discord("abcd", 4, 5*time.Second, false), want: "served"},
			{method: "GET", path: "/guilds/9/members", status: 200, header: discord("efgh", 9, 10*time.Second, false), want: "served"},
			{method: "GET", path: "/guilds/9/members", status: 200, header: discord("efgh", 8, 10*time.Second, false), want: "served"},
			// The global limit holds every route.
			{method: "POST", path: "/channels/2/messages", status: 429, header: discord("", 0, 3*time.Second, true), want: "deferred"},
			{method: "GET", path: "/guilds/9/members", want: "gate"},
			{method: "POST", path: "/channels/3/messages", want: "gate"},
			{after: 6 * time.Second, method: "POST", path: "/channels/1/messages", status: 200, header: discord("abcd", 4, 5*time.Second, false), want: "served"},
			{method: "GET", path: "/guilds/9/members", status: 200, header: discord("efgh", 9, 10*time.Second, false), want: "served"},
		}},
	}
}

// runNamed sends each step's request through the Transport through(i)
// gives step i, and checks what the caller sees and what reached api.
func runNamed(t *testing.T, api *namedAPI, steps []namedStep, through func(i int) http.RoundTripper) {
	t.Helper()
	for i, step := range steps {
		time.Sleep(step.after)
		api.mu.Lock()
		api.step, api.got = step, nil
		api.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, step.method, "https://api.test"+step.path, nil)
		require.NoError(t, err)
		start := time.Now()
		resp, err := (&http.Client{Transport: through(i)}).Do(req)
		cancel()
		var de *heed.DeferredError
		switch step.want {
		case "served":
			require.NoError(t, err, "step %d", i)
			assert.Equal(t, step.status, resp.StatusCode, "step %d", i)
			_ = resp.Body.Close()
			assert.Equal(t, start, time.Now(), "step %d: sent at once", i)
		case "deferred":
			require.True(t, errors.As(err, &de), "step %d: %v", i, err)
			assert.Equal(t, 1, de.Attempts, "step %d", i)
		case "gate":
			require.True(t, errors.As(err, &de), "step %d: %v", i, err)
			assert.Zero(t, de.Attempts, "step %d: deferred at the gate", i)
		}
		api.mu.Lock()
		got := len(api.got)
		api.mu.Unlock()
		if step.want == "gate" {
			assert.Zero(t, got, "step %d: %s %s reached the server", i, step.method, step.path)
		} else {
			assert.Equal(t, 1, got, "step %d: %s %s", i, step.method, step.path)
		}
	}
}

// TestNamedScopeFixtures replays a vendor's recorded refusal that names
// its limit (GitHub's 403 of a spent core, Discord's 429 of a bucket)
// after heed has seen another request answered under another name (a
// search, or the same bucket in another channel): the refusal holds the
// requests of its own limit, deferred at the gate, and not the other's,
// sent at once: through one Transport, and through four sharing a gate, a
// request through each, the last two having sent nothing before.
func TestNamedScopeFixtures(t *testing.T) {
	tests := []struct {
		fixture     string
		method      string
		held, other string                          // the fixture's request, and another
		otherAnswer func(now time.Time) http.Header // the other's answer, naming its limit
	}{
		{"github-403-primary-rate-limit.http", "GET", "https://api.github.com/repos/octocat/hello-world", "https://api.github.com/search/issues",
			github("search", 29, time.Minute)},
		{"discord-429-rate-limit.http", "POST", "https://discord.com/api/v10/channels/1/messages", "https://discord.com/api/v10/channels/2/messages",
			discord("abcd1234", 4, 5*time.Second, false)},
	}
	for _, tc := range tests {
		for _, fleet := range []bool{false, true} {
			t.Run(strings.TrimSuffix(tc.fixture, ".http")+map[bool]string{false: "/alone", true: "/a fleet"}[fleet], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toFixtureEpoch(t)
					var got []string
					rt := fixtureRT(func(req *http.Request) (*http.Response, error) {
						got = append(got, req.URL.String())
						if req.URL.String() == tc.held && len(got) == 2 {
							resp := loadFixture(t, tc.fixture)
							rebaseFixture(t, resp, time.Now())
							resp.Request = req
							return resp, nil
						}
						return &http.Response{StatusCode: 200, Header: tc.otherAnswer(time.Now()), Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
					})
					var trs []http.RoundTripper
					if fleet {
						gate := heed.NewGate()
						for range 4 {
							trs = append(trs, heed.New(rt, heed.WithGate(gate)))
						}
					} else {
						trs = []http.RoundTripper{heed.New(rt)}
					}
					turn := 0
					do := func(url string) (*http.Response, error) {
						tr := trs[turn%len(trs)]
						turn++
						return tr.RoundTrip(newRequest(t, t.Context(), tc.method, url, nil))
					}
					resp, err := do(tc.other) // teaches heed the other's name
					require.NoError(t, err)
					readBody(t, resp)
					_, err = do(tc.held) // the fixture: a wait over MaxWait
					var de *heed.DeferredError
					require.True(t, errors.As(err, &de), "%v", err)
					assert.Equal(t, 1, de.Attempts)
					_, err = do(tc.held)
					require.True(t, errors.As(err, &de), "%v", err)
					assert.Zero(t, de.Attempts, "the fixture's limit holds its own requests at the gate")
					start := time.Now()
					resp, err = do(tc.other)
					require.NoError(t, err, "the other limit is not held")
					readBody(t, resp)
					assert.Equal(t, start, time.Now())
					assert.Equal(t, []string{tc.other, tc.held, tc.other}, got)
				})
			})
		}
	}
}

// TestNamedSecondaryLimitHoldsTheScope: a throttle that names a limit with
// sends left was not that limit's: GitHub's secondary limits name the
// resource of the request (core, 4,987 left) but count the whole account,
// so the answer holds the request scope, search calls included, for its
// wait: the header's, or the minute a body alone means.
func TestNamedSecondaryLimitHoldsTheScope(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		wait    time.Duration
	}{
		{"github-403-secondary-rate-limit.http", time.Minute},
		{"github-403-secondary-no-retry-after.http", time.Minute},
	} {
		t.Run(strings.TrimSuffix(tc.fixture, ".http"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toFixtureEpoch(t)
				const core, search = "https://api.github.com/repos/octocat/hello-world", "https://api.github.com/search/issues"
				var got []string
				rt := fixtureRT(func(req *http.Request) (*http.Response, error) {
					got = append(got, req.URL.String())
					if req.URL.String() == core {
						resp := loadFixture(t, tc.fixture)
						rebaseFixture(t, resp, time.Now())
						resp.Request = req
						return resp, nil
					}
					return &http.Response{StatusCode: 200, Header: github("search", 29, time.Minute)(time.Now()), Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
				})
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{MaxWait: 30 * time.Second}))
				do := func(url string) error {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", url, nil))
					if err == nil {
						readBody(t, resp)
					}
					return err
				}
				require.NoError(t, do(search)) // teaches heed search's name
				start := time.Now()
				var de *heed.DeferredError
				require.ErrorAs(t, do(core), &de)
				assert.Equal(t, 1, de.Attempts)
				for _, url := range []string{search, core} {
					require.ErrorAs(t, do(url), &de, url)
					assert.Zero(t, de.Attempts, "%s is held at the gate", url)
					assert.GreaterOrEqual(t, de.RetryAt.Sub(start), tc.wait, url)
				}
				assert.Equal(t, []string{search, core}, got)
			})
		})
	}
}
