// The loopback server under every fake vendor API: started on 127.0.0.1,
// stopped by Close, recording each request it saw, answering from a
// script.

package sdkdemo

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Fake is a loopback HTTP server standing in for a vendor's API, which
// records each request as an A. Embed it in the vendor's fake and call
// Serve once, before any request. Its methods are safe for concurrent use.
type Fake[A any] struct {
	srv *httptest.Server

	mu       sync.Mutex
	arrivals []A
}

// Serve starts serving h on a free port of 127.0.0.1.
func (f *Fake[A]) Serve(h http.Handler) { f.srv = httptest.NewServer(h) }

// URL is the server's base URL, "http://127.0.0.1:port", with no slash.
func (f *Fake[A]) URL() string { return f.srv.URL }

// Close stops the server, waiting for the requests in flight.
func (f *Fake[A]) Close() { f.srv.Close() }

// Arrive records a request and returns how many have arrived, this one
// included: the n of Pick.
func (f *Fake[A]) Arrive(a A) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arrivals = append(f.arrivals, a)
	return len(f.arrivals)
}

// Arrivals returns a copy of the requests recorded so far, in order.
func (f *Fake[A]) Arrivals() []A {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]A(nil), f.arrivals...)
}

// Pick is a script's answer to its n-th request, counted from 1: the n-th
// entry, the last once the script runs out, or empty when it is empty.
func Pick[R any](script []R, n int, empty R) R {
	if len(script) == 0 {
		return empty
	}
	return script[min(n, len(script))-1]
}

// Route is h for method requests to path; any other request gets a 404.
func Route(method, path string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method || r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	})
}

// Answer writes header, then status and body. The caller sets the headers
// every response of its vendor carries first; header may override them.
func Answer(w http.ResponseWriter, status int, header map[string]string, body string) {
	h := w.Header()
	for k, v := range header {
		h.Set(k, v)
	}
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}
