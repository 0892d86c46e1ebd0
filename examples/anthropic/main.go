// Command anthropic calls the Anthropic Messages API through the official
// Go SDK (github.com/anthropics/anthropic-sdk-go/v2) with heed as the
// transport of its *http.Client and the SDK's own retries turned off.
//
// Without -base-url it starts a fake Anthropic API on 127.0.0.1 and shows
// four cases: a 429 waited out exactly as long as retry-after asked, a 529
// overloaded_error retried, a retry-after longer than the deadline
// returned at once as a *heed.DeferredError found with errors.As through
// the SDK's error, and what the SDK's own retries do to that deferral.
//
// With -base-url (for example https://api.anthropic.com) it sends one
// message with the key in ANTHROPIC_API_KEY. A deferral prints
// "retry-at <RFC 3339>" and exits 75 (EX_TEMPFAIL), as `heed get` does.
package main

import "github.com/heed-go/heed/examples/internal/sdkdemo"

func main() { sdkdemo.Main(run) }

// run is the program; it returns the exit code.
var run = sdkdemo.Prompt[*client]{
	Name: "anthropic", BaseURL: "Anthropic API base URL, e.g. https://api.anthropic.com",
	Model: "claude-haiku-5-5", KeyEnv: "ANTHROPIC_API_KEY",
	Client: newClient, Demo: demo, Describe: describe,
}.Run
