package heed

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBypassPlaceGivenBackBeforeTheObserver: a call whose Transport has an
// observer or a logger gives its bypass place back as its answer comes,
// before the observer hears of it: a quota published while the observer
// runs does not count the place as a send in flight, so the calls that ask
// for the sends the server says are left are sent, not deferred till the
// quota's reset.
//
// Call X is delivered with no quota, and its observer is busy; Y's answer
// then says one send (or two) is left for a minute; calls Q, made while
// X's observer is still busy, are those sends.
func TestBypassPlaceGivenBackBeforeTheObserver(t *testing.T) {
	for _, tc := range []struct {
		name      string
		remaining int // the quota Y's answer publishes, and the calls Q
	}{
		{"one left", 1},
		{"two left", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					h := http.Header{}
					if r.URL.Path == "/y" {
						h.Set("X-RateLimit-Remaining", strconv.Itoa(tc.remaining))
						h.Set("X-RateLimit-Reset", "60")
					}
					return &http.Response{StatusCode: http.StatusOK, Header: h, Body: http.NoBody, Request: r}, nil
				})
				busy, free := make(chan struct{}), make(chan struct{})
				var once sync.Once
				observe := func(e Event) {
					if e.Kind == EventDelivered && e.URL == "https://api.test/x" {
						once.Do(func() {
							close(busy)
							<-free
						})
					}
				}
				tr := New(inner, WithPolicy(Policy{MaxAttempts: 1, MaxWait: time.Second}), WithObserver(observe))
				send := func(path string) (*http.Response, error) {
					ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
					defer cancel()
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.test"+path, nil)
					require.NoError(t, err)
					return tr.RoundTrip(req)
				}
				xDone := make(chan struct{})
				go func() {
					defer close(xDone)
					_, err := send("/x")
					assert.NoError(t, err)
				}()
				<-busy // X is answered; its observer is busy

				_, err := send("/y") // publishes the quota
				require.NoError(t, err)
				for i := range tc.remaining {
					resp, err := send("/q")
					if assert.NoError(t, err, "call %d of %d the server said are left, made while X ends", i+1, tc.remaining) {
						assert.Equal(t, http.StatusOK, resp.StatusCode)
					}
				}
				close(free)
				<-xDone
			})
		})
	}
}
