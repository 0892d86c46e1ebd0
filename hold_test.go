package heed_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// TestOneResponseCannotLockAScopeOut: a hint of centuries defers the
// request that got it by the server's word, but what its scope shares with
// every other request, a hold or a published quota's reset, is bounded by
// WithMaxHold, a day by default; past the bound the scope sends again.
func TestOneResponseCannotLockAScopeOut(t *testing.T) {
	huge := []struct {
		name    string
		reply   reply
		own     time.Duration // the wait the response's own request defers by; 0: delivered
		ownWait bool
	}{
		{"429 Retry-After of 292 years", tooMany("Retry-After", "9223372036"), 9223372036 * time.Second, true},
		{"429 Retry-After of 30 years", tooMany("Retry-After", strconv.Itoa(30*365*86400)), 30 * 365 * 86400 * time.Second, true},
		{"503 retry-after-ms of a year", reply{status: 503, header: hdr("Retry-After-Ms", strconv.Itoa(365*86400*1000))}, 365 * 24 * time.Hour, true},
		{"200 spending the quota until the year 2255", reply{status: 200, header: hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "9000000000"), body: "ok"}, 0, false},
		{"200 with RateLimit r=0 for 10 years", reply{status: 200, header: hdr("RateLimit", `"default";r=0;t=315360000`), body: "ok"}, 0, false},
	}
	bounds := []struct {
		name string
		opt  heed.Option
		max  time.Duration
	}{
		{"default", nil, heed.DefaultMaxHold},
		{"an hour", heed.WithMaxHold(time.Hour), time.Hour},
		{"ten seconds", heed.WithMaxHold(10 * time.Second), 10 * time.Second},
		{"zero means the default", heed.WithMaxHold(0), 24 * time.Hour},
	}
	for _, b := range bounds {
		for _, h := range huge {
			t.Run(b.name+"/"+h.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rt := script(h.reply, ok200)
					gate := heed.NewGate()
					tr := heed.New(rt, heed.WithGate(gate), b.opt)
					start := time.Now()
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/tenant1/a", nil))
					if h.ownWait {
						var de *heed.DeferredError
						require.ErrorAs(t, err, &de)
						assert.Equal(t, start.Add(h.own), de.RetryAt, "the request that got the hint defers by it")
					} else {
						require.NoError(t, err)
						resp.Body.Close()
					}

					// Another path of the same host, with little time: it
					// defers to the bound, not to the hint.
					ctx, cancel := context.WithTimeout(t.Context(), time.Second)
					_, err = tr.RoundTrip(newRequest(t, ctx, "GET", "https://api.example/tenant2/b", nil))
					cancel()
					var de *heed.DeferredError
					require.ErrorAs(t, err, &de)
					assert.Equal(t, 0, de.Attempts, "deferred at the gate, unsent")
					assert.WithinRange(t, de.RetryAt, start.Add(b.max), start.Add(b.max+20*time.Millisecond))
					nb, err := gate.NotBefore(t.Context(), "api.example")
					require.NoError(t, err)
					assert.LessOrEqual(t, nb.Sub(start), b.max, "the gate holds at most the bound")
					assert.Len(t, rt.requests(), 1)

					// Past the bound, the scope sends.
					time.Sleep(b.max + 21*time.Millisecond)
					resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/tenant2/b", nil))
					require.NoError(t, err)
					resp.Body.Close()
					assert.Len(t, rt.requests(), 2)
				})
			})
		}
	}
}

// TestScopeForKeepsTenantsApart: Policy.ScopeFor names each request's
// scope, here from its context, so a tenant's throttle holds that tenant
// alone on a host the tenants share; an empty name falls back to Scope.
func TestScopeForKeepsTenantsApart(t *testing.T) {
	type tenantKey struct{}
	scopeFor := func(r *http.Request) string {
		s, _ := r.Context().Value(tenantKey{}).(string)
		return s
	}
	tests := []struct {
		name      string
		a, b      string // the tenants of the first and second request
		scope     string // Policy.Scope
		heldScope string // the scope the throttle holds
		bWaits    bool
	}{
		{"two tenants", "tenant1", "tenant2", "", "tenant1", false},
		{"one tenant twice", "tenant1", "tenant1", "", "tenant1", true},
		{"no tenant: the host", "", "tenant2", "", "api.example", false},
		{"no tenant: Policy.Scope", "", "", "shared", "shared", true},
		{"a tenant beside Policy.Scope", "tenant1", "", "shared", "tenant1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tooMany("Retry-After", "30"), ok200)
				gate := heed.NewGate()
				tr := heed.New(rt, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxAttempts: 1, Scope: tt.scope, ScopeFor: scopeFor}))
				start := time.Now()
				ctxA := context.WithValue(t.Context(), tenantKey{}, tt.a)
				resp, err := tr.RoundTrip(newRequest(t, ctxA, "GET", "https://api.example/v1/x", nil))
				require.NoError(t, err)
				resp.Body.Close()
				nb, err := gate.NotBefore(t.Context(), tt.heldScope)
				require.NoError(t, err)
				assert.Equal(t, start.Add(30*time.Second), nb, "the throttle holds %q", tt.heldScope)

				ctxB := context.WithValue(t.Context(), tenantKey{}, tt.b)
				resp, err = tr.RoundTrip(newRequest(t, ctxB, "GET", "https://api.example/v1/x", nil))
				require.NoError(t, err)
				resp.Body.Close()
				if tt.bWaits {
					assert.GreaterOrEqual(t, time.Since(start), 30*time.Second)
				} else {
					assert.Equal(t, start, time.Now(), "another scope is not held")
				}
			})
		})
	}
}

// TestScopeForPanicClosesTheBody: a RoundTrip closes the caller's body on
// every path, a panicking ScopeFor's included.
func TestScopeForPanicClosesTheBody(t *testing.T) {
	tr := heed.New(script(ok200), heed.WithPolicy(heed.Policy{ScopeFor: func(*http.Request) string { panic("tenant lookup failed") }}))
	body := newCloseCounter("payload")
	req := newRequest(t, t.Context(), "PUT", "https://api.example/x", body)
	assert.PanicsWithValue(t, "tenant lookup failed", func() { _, _ = tr.RoundTrip(req) })
	assert.Equal(t, 1, body.closes())
}

// TestOneHerdCannotLockAScopeOut: a herd's refusal with a hint of hours or
// centuries starts the scope's pace, whose hold is bounded by WithMaxHold
// as the gate's is: past the bound, the scope's sends go, and do not wait
// on the pace for the hint.
func TestOneHerdCannotLockAScopeOut(t *testing.T) {
	for _, bound := range []time.Duration{2 * time.Second, 10 * time.Second} {
		for _, hint := range []string{"3600", "9223372036"} {
			t.Run(bound.String()+"/"+hint, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var calls atomic.Int64
					rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
						n := calls.Add(1)
						time.Sleep(5 * time.Millisecond)
						resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}
						if n == 3 {
							resp.StatusCode = http.StatusTooManyRequests
							resp.Header.Set("Retry-After", hint)
						}
						return resp, nil
					})
					client := &http.Client{Transport: heed.New(rt, heed.WithMaxHold(bound))}
					var wg sync.WaitGroup
					for range 6 {
						wg.Go(func() {
							ctx, cancel := context.WithTimeout(t.Context(), time.Second)
							defer cancel()
							if resp, err := client.Do(newRequest(t, ctx, "GET", "https://api.example/a", nil)); err == nil {
								resp.Body.Close()
							}
						})
					}
					wg.Wait()
					time.Sleep(bound)
					start := time.Now()
					for range 3 {
						wg.Go(func() {
							resp, err := client.Do(newRequest(t, t.Context(), "GET", "https://api.example/a", nil))
							require.NoError(t, err)
							resp.Body.Close()
							assert.Equal(t, http.StatusOK, resp.StatusCode)
						})
					}
					wg.Wait()
					assert.Less(t, time.Since(start), time.Second, "past the bound the scope sends")
				})
			})
		}
	}
}
