// Command github calls the GitHub REST API through go-github
// (github.com/google/go-github/v93) with heed as the transport of its
// *http.Client and go-github's own rate-limit check turned off
// (github.WithDisableRateLimitCheck), so that every call reaches heed.
//
// Without -base-url it starts a fake GitHub API on 127.0.0.1 and shows a
// primary limit waited out to x-ratelimit-reset, a secondary limit waited
// out as retry-after asks, a reset too far off returned at once as a
// *heed.DeferredError, what a spent search limit does to core calls (heed
// reads no x-ratelimit-resource; a route gives search a scope of its own),
// and what go-github's own check does when left on.
//
// With -base-url (https://api.github.com/) it fetches one repository, with
// the token in GITHUB_TOKEN if set. A deferral prints
// "retry-at <RFC 3339>" and exits 75 (EX_TEMPFAIL), as `heed get` does.
package main

import "github.com/heed-go/heed/examples/internal/sdkdemo"

func main() { sdkdemo.Main(run) }

// run is the program; it returns the exit code.
var run = sdkdemo.Program{
	Name: "github", BaseURL: "GitHub API base URL, e.g. https://api.github.com/",
	Flags: repoFlags, Demo: demo, Describe: describe,
}.Run
