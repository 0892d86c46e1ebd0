package heed

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answering is an in-memory transport that answers by host: a host whose
// name starts with "throttled" gets a 429 with Retry-After: 1, "blocked"
// waits on release before its 200, "quota" publishes a quota of 5 for two
// minutes, others a 200 at once.
func answering(release <-chan struct{}) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		status, h := http.StatusOK, http.Header{}
		switch {
		case strings.HasPrefix(r.URL.Host, "throttled"):
			status = http.StatusTooManyRequests
			h.Set("Retry-After", "1")
		case strings.HasPrefix(r.URL.Host, "blocked"):
			<-release
		case strings.HasPrefix(r.URL.Host, "quota"):
			h.Set("X-RateLimit-Remaining", "5")
			h.Set("X-RateLimit-Reset", "120")
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	})
}

// get sends a GET to host through tr and closes the body, unless keep is
// set, when it returns the response with its body open.
func get(t *testing.T, tr *Transport, host string, keep bool) *http.Response {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+host+"/x", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	if !keep {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp
}

// TestTransportForgetsQuietScopes: a Transport keeps quietKept scopes whose
// history is only successes, and forgets the rest a few at a time as new
// ones come; a scope in use, with a Limit slot held, used again since the
// sweep last passed it, or whose state is not over, is kept.
func TestTransportForgetsQuietScopes(t *testing.T) {
	const more = 3 * quietKept // one-request scopes after the one watched
	tests := []struct {
		name  string
		host  string
		limit Limit
		keep  bool          // the watched scope's body stays open
		after time.Duration // how long after its request the others come
		want  bool          // the watched scope is still kept
	}{
		{"a one-request scope", "one.test", Limit{}, false, 0, false},
		{"a scope used again between the others", "hot.test", Limit{}, false, 0, true},
		{"a throttled scope, within the wire check's minute", "throttled.test", Limit{}, false, 30 * time.Second, true},
		{"a throttled scope, a minute on: its hold and wire window over", "throttled2.test", Limit{}, false, 61 * time.Second, false},
		{"a scope in use", "blocked.test", Limit{}, false, 0, true},
		{"a scope whose published quota resets in two minutes, a minute on", "quota.test", Limit{}, false, 61 * time.Second, true},
		{"a scope whose published quota has reset", "quota2.test", Limit{}, false, 121 * time.Second, false},
		{"a scope whose Limit slot a body holds", "slot.test", Limit{InFlight: 2}, true, 0, true},
		{"a scope whose Limit slot came back", "slot2.test", Limit{InFlight: 2}, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				// A budget with no floor: no call is calm (calm.go), so
				// that every scope registers, as one with state does.
				tr := New(answering(release), WithPolicy(Policy{MaxAttempts: 1, Limit: tt.limit, Budget: Budget{MinPerSecond: -1}}))
				var wg sync.WaitGroup
				var open *http.Response
				if strings.HasPrefix(tt.host, "blocked") {
					wg.Go(func() { get(t, tr, tt.host, false) })
					synctest.Wait()
				} else {
					open = get(t, tr, tt.host, tt.keep)
				}
				tr.scopesMu.RLock()
				watched := tr.scopes[tt.host]
				tr.scopesMu.RUnlock()
				require.NotNil(t, watched)
				time.Sleep(tt.after)
				for i := range more {
					get(t, tr, "h"+strconv.Itoa(i)+".test", false)
					if tt.host == "hot.test" && i%quietKept == 0 {
						get(t, tr, tt.host, false)
					}
				}
				tr.scopesMu.RLock()
				kept := tr.scopes[tt.host]
				n, queued := len(tr.scopes), tr.order.len()
				tr.scopesMu.RUnlock()
				close(release)
				wg.Wait()
				if open != nil && tt.keep {
					open.Body.Close()
				}
				assert.Equal(t, n, queued, "every scope queued once")
				assert.Equal(t, int64(n), tr.live.Load(), "every scope counted once")
				assert.LessOrEqual(t, n, quietKept+2, "one-request scopes beyond quietKept are forgotten")
				if tt.want {
					assert.Same(t, watched, kept, "the scope is kept, the same one")
				} else {
					assert.Nil(t, kept, "the scope is forgotten")
				}
			})
		})
	}
}

// TestPanicTellsTheGate: a Classifier that panics after a send was
// admitted leaves the gate counting nothing in flight, so that the scope
// can be forgotten, and its quota is counted right.
func TestPanicTellsTheGate(t *testing.T) {
	for _, where := range []string{"classifier", "inner transport"} {
		t.Run(where, func(t *testing.T) {
			inner := answering(nil)
			policy := Policy{MaxAttempts: 1}
			if where == "classifier" {
				policy.Classify = func(*http.Request, *http.Response, error) Verdict { panic("a classifier's bug") }
			} else {
				inner = roundTripperFunc(func(*http.Request) (*http.Response, error) { panic("a transport's bug") })
			}
			gate := NewGate().(*memGate)
			tr := New(inner, WithGate(gate), WithPolicy(policy))
			func() {
				defer func() { assert.NotNil(t, recover(), "the panic reaches the caller") }()
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://panics.test/x", nil)
				require.NoError(t, err)
				_, _ = tr.RoundTrip(req)
			}()
			gate.mu.Lock()
			defer gate.mu.Unlock()
			require.Contains(t, gate.scopes, "panics.test")
			assert.Zero(t, gate.scopes["panics.test"].inflight, "nothing in flight")
			tr.scopesMu.RLock()
			defer tr.scopesMu.RUnlock()
			assert.Zero(t, tr.scopes["panics.test"].users.Load(), "nothing uses the scope")
		})
	}
}

// TestForgottenScopesBudget: a scope that retried is kept while its retry
// budget still counts its attempts (a window longer than the wire check's
// minute included), and a forgotten scope made another's hands that one a
// budget with nothing counted: the first attempts of the ones forgotten do
// not buy retries for the next.
func TestForgottenScopesBudget(t *testing.T) {
	tests := []struct {
		name   string
		window time.Duration
		after  time.Duration // how long after the watched scope's last answer the others come
		kept   bool
	}{
		{"within the budget's window of 2 minutes", 2 * time.Minute, 90 * time.Second, true},
		{"past the budget's window of 2 minutes", 2 * time.Minute, 121 * time.Second, false},
		{"past the wire check's minute, the default window", 0, 61 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent sync.Map // host → attempts
				rt := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					n, _ := sent.LoadOrStore(r.URL.Host, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
					status, h := http.StatusOK, http.Header{}
					if strings.HasPrefix(r.URL.Host, "refused") {
						status = http.StatusServiceUnavailable
						h.Set("Retry-After", "1")
					}
					return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
				})
				// Retries up to the first attempts in the window, and none beside.
				budget := Budget{Ratio: 1, MinPerSecond: -1, Window: tt.window}
				tr := New(rt, WithPolicy(Policy{MaxAttempts: 4, Budget: budget}))
				for i := range 2 * quietKept {
					for range 4 { // first attempts, a budget for retries, in scopes soon forgotten
						get(t, tr, "busy"+strconv.Itoa(i)+".test", false)
					}
				}
				get(t, tr, "refused1.test", false) // one first attempt: one retry, then the budget refuses
				tr.scopesMu.RLock()
				watched := tr.scopes["refused1.test"]
				tr.scopesMu.RUnlock()
				require.NotNil(t, watched)
				time.Sleep(tt.after)
				for i := range 3 * quietKept {
					get(t, tr, "h"+strconv.Itoa(i)+".test", false)
				}
				tr.scopesMu.RLock()
				kept := tr.scopes["refused1.test"]
				tr.scopesMu.RUnlock()
				if tt.kept {
					assert.Same(t, watched, kept, "kept while its budget counts")
				} else {
					assert.Nil(t, kept, "forgotten once its budget's window is over")
				}
				// A new scope that always refuses has one first attempt
				// to its name, so one retry, in a scope made of a
				// forgotten one.
				get(t, tr, "refused2.test", false)
				for _, host := range []string{"refused1.test", "refused2.test"} {
					n, _ := sent.Load(host)
					assert.Equal(t, int64(2), n.(*atomic.Int64).Load(), "%s: a first attempt and the one retry it buys", host)
				}
			})
		})
	}
}
