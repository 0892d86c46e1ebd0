package heed

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForgottenScopeFindsItsGate: a scope the Transport forgets has no
// state in its gate, as the two keep a quota's reset alike; should they
// disagree (here the scope's own record of its quota and last state is
// moved back two minutes), the scope found again starts with its bypass
// shut while the gate has state for it, so its calls still ask the gate
// and are not sent past a spent quota. The server says no send is left for
// 90 s; 3,000 other scopes' calls then make the sweep pass over the scope
// twice; a call to it must defer.
func TestForgottenScopeFindsItsGate(t *testing.T) {
	for _, tc := range []struct {
		name string
		step time.Duration
	}{
		{"no step", 0},
		{"its record two minutes short of the gate's", 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := 0
			inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				h := http.Header{}
				if r.URL.Host == "api.test" {
					sent++
					h.Set("X-RateLimit-Remaining", "0")
					h.Set("X-RateLimit-Reset", "90")
				}
				return &http.Response{StatusCode: http.StatusOK, Header: h, Body: http.NoBody, Request: r}, nil
			})
			tr := New(inner, WithPolicy(Policy{MaxAttempts: 1, MaxWait: time.Second}))
			send := func(url string) error {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				return err
			}
			require.NoError(t, send("https://api.test/a")) // the quota: none left for 90 s
			var de *DeferredError
			require.ErrorAs(t, send("https://api.test/b"), &de, "the spent quota holds the scope")
			require.Equal(t, 1, sent)

			sl := tr.scopes["api.test"]
			require.NotNil(t, sl)
			sl.quotaUntil.Add(-int64(tc.step))
			sl.stateAt.Add(-int64(tc.step))

			for i := range 3000 {
				require.NoError(t, send(fmt.Sprintf("https://h%d.test/", i)))
			}
			nb, _ := tr.own.NotBefore(t.Context(), "api.test")
			require.Greater(t, time.Until(nb), 80*time.Second, "the gate still holds the spent quota")

			err := send("https://api.test/c")
			assert.True(t, errors.As(err, &de), "deferred till the quota's reset; got %v", err)
			assert.Equal(t, 1, sent, "no send past the spent quota")
		})
	}
}
