// A fake GitHub REST API on 127.0.0.1: one core endpoint and one search
// endpoint, each answering from its own script.
//
// It answers as GitHub documents its limits
// (docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
// and .../troubleshooting-the-rest-api):
//   - every response carries x-ratelimit-limit, -remaining, -used, -reset
//     (a Unix time in seconds) and -resource (core, search, ...): each
//     resource has its own limit (core 5000 an hour, search 30 a minute);
//   - a primary limit spent is a 403 or 429 with x-ratelimit-remaining: 0;
//     do not retry before x-ratelimit-reset;
//   - a secondary limit is a 403 or 429 whose message says "You have
//     exceeded a secondary rate limit"; with retry-after, wait that many
//     seconds; without it (and remaining not 0), wait at least a minute.

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
)

// Resources, as x-ratelimit-resource names them.
const (
	core   = "core"
	search = "search"
)

// reply is one scripted answer; resets count from the request's arrival.
type reply struct {
	status     int
	remaining  int
	resetIn    time.Duration
	retryAfter time.Duration // 0: no retry-after header
	message    string        // "" for a success
	docURL     string
}

// arrival is one request as the fake saw it.
type arrival struct {
	at       time.Time
	resource string
	reset    time.Time // the x-ratelimit-reset it was answered with
}

// fakeGitHub answers GET /repos/{owner}/{repo} (core) and
// GET /search/repositories (search), one reply per request of a resource,
// repeating the resource's last reply when its script runs out.
type fakeGitHub struct {
	sdkdemo.Fake[arrival]
	scripts map[string][]reply

	mu     sync.Mutex
	served map[string]int
}

// newFakeGitHub starts a fake on 127.0.0.1 with a script per resource.
func newFakeGitHub(coreScript, searchScript []reply) *fakeGitHub {
	f := &fakeGitHub{
		scripts: map[string][]reply{core: coreScript, search: searchScript},
		served:  make(map[string]int),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}", func(w http.ResponseWriter, r *http.Request) {
		f.serve(w, core, repoBody(r.PathValue("owner"), r.PathValue("repo")))
	})
	mux.HandleFunc("GET /search/repositories", func(w http.ResponseWriter, r *http.Request) {
		f.serve(w, search, `{"total_count":1,"incomplete_results":false,"items":[`+repoBody("heed-go", "heed")+`]}`)
	})
	f.Serve(mux)
	return f
}

// URL is the base URL to give the client.
func (f *fakeGitHub) URL() string { return f.Fake.URL() + "/" }

// Arrivals returns the requests of resource received so far.
func (f *fakeGitHub) Arrivals(resource string) []arrival {
	var out []arrival
	for _, a := range f.Fake.Arrivals() {
		if a.resource == resource {
			out = append(out, a)
		}
	}
	return out
}

func (f *fakeGitHub) serve(w http.ResponseWriter, resource, okBody string) {
	now := time.Now()
	f.mu.Lock()
	f.served[resource]++
	rep := sdkdemo.Pick(f.scripts[resource], f.served[resource], reply{status: http.StatusInternalServerError, message: "empty script"})
	// x-ratelimit-reset is whole seconds: round up, never announce early.
	reset := now.Add(rep.resetIn + time.Second - 1).Truncate(time.Second)
	f.Arrive(arrival{at: now, resource: resource, reset: reset})
	f.mu.Unlock()

	limit := 5000
	if resource == search {
		limit = 30
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("x-github-request-id", "FAKE:"+strconv.FormatInt(now.UnixNano()%1e9, 16))
	h.Set("x-ratelimit-limit", strconv.Itoa(limit))
	h.Set("x-ratelimit-remaining", strconv.Itoa(rep.remaining))
	h.Set("x-ratelimit-used", strconv.Itoa(limit-rep.remaining))
	h.Set("x-ratelimit-reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("x-ratelimit-resource", resource)
	if rep.retryAfter > 0 {
		h.Set("retry-after", strconv.FormatInt(int64(rep.retryAfter/time.Second), 10))
	}
	w.WriteHeader(rep.status)
	if rep.message == "" {
		fmt.Fprint(w, okBody)
		return
	}
	b, _ := json.Marshal(map[string]string{"message": rep.message, "documentation_url": rep.docURL, "status": strconv.Itoa(rep.status)})
	fmt.Fprint(w, string(b))
}

// repoBody is the repository object for owner/repo.
func repoBody(owner, repo string) string {
	b, _ := json.Marshal(map[string]any{
		"id": 1, "name": repo, "full_name": owner + "/" + repo,
		"owner": map[string]any{"login": owner}, "stargazers_count": 42,
	})
	return string(b)
}

// ok is a 200 with remaining calls left until a reset resetIn from now.
func ok(remaining int, resetIn time.Duration) reply {
	return reply{status: http.StatusOK, remaining: remaining, resetIn: resetIn}
}

// primary is a spent primary limit: status 403 or 429, remaining 0 until
// the reset.
func primary(status int, resetIn time.Duration) reply {
	return reply{
		status: status, remaining: 0, resetIn: resetIn,
		message: "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID FAKE.",
		docURL:  "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
	}
}

// secondary is a secondary limit: a 403 with retry-after (0: none), the
// primary limit not spent.
func secondary(retryAfter time.Duration) reply {
	return reply{
		status: http.StatusForbidden, remaining: 4990, resetIn: time.Hour, retryAfter: retryAfter,
		message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. " +
			"If you reach out to GitHub Support for help, please include the request ID FAKE.",
		docURL: "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
	}
}
