package heed_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed"
)

// Wrap an http.Client's transport with heed and configure two routes, then
// catch a deferral and keep its RetryAt.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120") // "come back in two minutes"
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()

	client := &http.Client{Transport: heed.New(http.DefaultTransport,
		heed.WithPolicy(heed.Policy{MaxAttempts: 3}),
		heed.WithRoute("POST /v1/images/", heed.Policy{Name: "images", MaxWait: 30 * time.Second, KeyHeader: "Idempotency-Key"}),
		heed.WithRoute("GET /v1/jobs/{id}", heed.Policy{Name: "job status", MaxAttempts: 10}),
	)}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/images/generate", strings.NewReader(`{"prompt":"a lighthouse"}`))
	_, err := client.Do(req)

	var de *heed.DeferredError
	if errors.As(err, &de) {
		// Store the job with de.RetryAt and let go of it.
		fmt.Println("deferred:", de.Route, de.Reason, "status", de.Status, "wait", de.Wait, "attempts", de.Attempts)
		fmt.Println("retry at is ahead:", de.RetryAt.After(time.Now().Add(119*time.Second)))
		fmt.Println("carries a key:", len(de.Key) == 36)
	}
	// Output:
	// deferred: images rate limited status 429 wait 2m0s attempts 1
	// retry at is ahead: true
	// carries a key: true
}

// ErrDeferred tells a deferral apart from a failure without the details.
func ExampleDeferredError() {
	err := fmt.Errorf("render job 7: %w", &heed.DeferredError{
		Method: "GET", URL: "https://api.example/v1/jobs/7", Reason: "cooling down",
		Wait: 90 * time.Second, RetryAt: time.Date(2026, 11, 29, 12, 1, 30, 0, time.UTC),
	})
	if errors.Is(err, heed.ErrDeferred) {
		var de *heed.DeferredError
		errors.As(err, &de)
		fmt.Println("requeue at", de.RetryAt.Format(time.RFC3339))
	}
	// Output: requeue at 2026-11-29T12:01:30Z
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"30", "Sun, 29 Nov 2026 12:00:45 GMT", "soon"} {
		d, ok := heed.ParseRetryAfter(v, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 30s true
	// 45s true
	// 0s false
}

func ExampleHint() {
	resp := &http.Response{StatusCode: 429, Header: http.Header{
		"Retry-After":    {"2"},
		"Retry-After-Ms": {"2500"},
	}}
	wait, source, ok := heed.Hint(resp, time.Now())
	fmt.Println(wait, source, ok)
	// Output: 2.5s retry-after-ms true
}

func ExamplePeekBody() {
	resp := &http.Response{StatusCode: 429, Body: io.NopCloser(strings.NewReader(`{"error":{"code":"insufficient_quota"}}`))}
	head, _ := heed.PeekBody(resp, 9)
	all, _ := io.ReadAll(resp.Body)
	fmt.Printf("%s\n%s\n", head, all)
	// Output:
	// {"error":
	// {"error":{"code":"insufficient_quota"}}
}

// A Classifier can refine the default: here a vendor's 400 with a
// "model_overloaded" code is worth waiting for.
func ExampleClassifier() {
	classify := func(req *http.Request, resp *http.Response, err error) heed.Verdict {
		if resp != nil && resp.StatusCode == 400 {
			if b, _ := heed.PeekBody(resp, 4096); strings.Contains(string(b), "model_overloaded") {
				return heed.Verdict{Class: heed.Throttled, Reason: "model overloaded"}
			}
		}
		return heed.DefaultClassifier(req, resp, err)
	}
	_ = heed.New(nil, heed.WithPolicy(heed.Policy{Classify: classify}))
	resp := &http.Response{StatusCode: 400, Body: io.NopCloser(strings.NewReader(`{"code":"model_overloaded"}`))}
	fmt.Println(classify(nil, resp, nil).Class)
	// Output: throttled
}

// Share one gate between two Transports: a throttle seen by one holds the
// other, which then defers without sending.
func ExampleNewGate() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()

	gate := heed.NewGate()
	a := &http.Client{Transport: heed.New(nil, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxAttempts: 1}))}
	b := &http.Client{Transport: heed.New(nil, heed.WithGate(gate))}

	resp, err := a.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		fmt.Println("a got", resp.StatusCode)
	}
	_, err = b.Get(srv.URL)
	var de *heed.DeferredError
	if errors.As(err, &de) {
		fmt.Println("b deferred:", de.Reason, "attempts", de.Attempts)
	}
	fmt.Println("requests the server saw:", hits.Load())
	// Output:
	// a got 429
	// b deferred: cooling down attempts 0
	// requests the server saw: 1
}

// Keep tenants that have limits of their own apart on one host: the scope
// of each request comes from its context, so one tenant's 429 holds that
// tenant alone.
func ExamplePolicy_scopeFor() {
	type tenantKey struct{}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Query().Get("tenant") == "acme" {
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	client := &http.Client{Transport: heed.New(http.DefaultTransport, heed.WithPolicy(heed.Policy{
		ScopeFor: func(r *http.Request) string {
			tenant, _ := r.Context().Value(tenantKey{}).(string)
			return tenant // "" falls back to the host
		},
	}))}
	get := func(tenant string) error {
		ctx := context.WithValue(context.Background(), tenantKey{}, tenant)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/x?tenant="+tenant, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	fmt.Println("acme deferred:", errors.Is(get("acme"), heed.ErrDeferred))
	fmt.Println("acme again, unsent:", errors.Is(get("acme"), heed.ErrDeferred), calls.Load())
	fmt.Println("globex sent:", get("globex") == nil, calls.Load())
	// Output:
	// acme deferred: true
	// acme again, unsent: true 1
	// globex sent: true 2
}

// Bound what one response can impose on the rest of its scope: a server
// that answers a 429 with a hint of a year defers that request by a year,
// but holds the other requests of the host an hour at most.
func ExampleWithMaxHold() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			w.Header().Set("Retry-After", "31536000") // a year
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	client := &http.Client{Transport: heed.New(http.DefaultTransport, heed.WithMaxHold(time.Hour))}
	var de *heed.DeferredError
	_, err := client.Get(srv.URL + "/broken")
	if errors.As(err, &de) {
		fmt.Println("that request waits:", de.Wait)
	}
	_, err = client.Get(srv.URL + "/other")
	if errors.As(err, &de) {
		fmt.Println("the host is held for:", de.Wait.Round(time.Minute), "attempts", de.Attempts)
	}
	// Output:
	// that request waits: 8760h0m0s
	// the host is held for: 1h0m0s attempts 0
}

// Keep to a limit you know and the server does not signal: at most 2
// requests in flight, as an API that refuses a third concurrent request
// documents. A herd of 6 goes in three rounds.
func ExampleLimit() {
	var inFlight, most atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	client := &http.Client{Transport: heed.New(http.DefaultTransport, heed.WithPolicy(heed.Policy{
		Limit: heed.Limit{InFlight: 2},
	}))}
	done := make(chan error)
	for range 6 {
		go func() {
			resp, err := client.Get(srv.URL + "/v1/speech")
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	for range 6 {
		if err := <-done; err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("most in flight at the server:", most.Load())
	// Output:
	// most in flight at the server: 2
}

func ExampleWithIdempotencyKey() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Key-Seen", r.Header.Get("Idempotency-Key"))
	}))
	defer srv.Close()
	// The API honours idempotency keys: name its header.
	client := &http.Client{Transport: heed.New(nil, heed.WithPolicy(heed.Policy{KeyHeader: "Idempotency-Key"}))}
	send := func(job string) string {
		// A job's identity, the same on every run of the job.
		ctx := heed.WithIdempotencyKey(context.Background(), job)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/renders", strings.NewReader(`{"prompt":"a fox"}`))
		resp, err := client.Do(req)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		return resp.Header.Get("X-Key-Seen")
	}
	first, again, other := send("render-42"), send("render-42"), send("render-43")
	fmt.Println(first == again, first != other, len(first))
	// Output: true true 36
}

func ExampleWithSlog() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "url" { // vary from run to run
				return slog.Attr{}
			}
			return a
		},
	}))
	client := &http.Client{Transport: heed.New(nil, heed.WithSlog(logger))}
	resp, err := client.Get(srv.URL + "/v1/status")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output: level=DEBUG msg=delivered op=delivered route=default method=GET attempt=1 status=200 class=deliver reason=ok wait=0s retry_at="" left=0s
}
