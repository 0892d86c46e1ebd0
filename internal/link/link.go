// Package link gives heed's own packages what package heed keeps
// unexported, without widening its public API. Package heed sets each
// variable when it loads; a package that imports heed may use them.
package link

import "net/http"

// Policy returns the heed.Policy that applies to req through t, a
// *heed.Transport, with every default filled in; its Scope stays empty
// when it defaults to the request's host, and its Classify already reads a
// 2xx body when PeekSuccess is set. The retryable adapter uses it to make
// heed's decisions inside another client.
var Policy func(t http.RoundTripper, req *http.Request) any
