// Command openai calls the OpenAI API through the official Go SDK
// (github.com/openai/openai-go/v3) with heed as the transport of its
// *http.Client and the SDK's own retries turned off.
//
// Without -base-url it starts a fake OpenAI server on 127.0.0.1 and shows
// three cases: a rate-limit 429 waited out exactly as long as retry-after-ms
// asked, an insufficient_quota 429 that stops after one request, and a wait
// longer than the deadline, returned at once as a *heed.DeferredError found
// with errors.As through the SDK's error.
//
// With -base-url (for example https://api.openai.com/v1) it sends one chat
// completion with the key in OPENAI_API_KEY. A deferral prints
// "retry-at <RFC 3339>" and exits 75 (EX_TEMPFAIL), as `heed get` does.
package main

import "github.com/heed-go/heed/examples/internal/sdkdemo"

func main() { sdkdemo.Main(run) }

// run is the program; it returns the exit code.
var run = sdkdemo.Prompt[*client]{
	Name: "openai", BaseURL: "OpenAI API base URL, e.g. https://api.openai.com/v1",
	Model: "gpt-4o-mini", KeyEnv: "OPENAI_API_KEY",
	Client: newClient, Demo: demo, Describe: describe,
}.Run
