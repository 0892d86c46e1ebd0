package heed_test

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

	"github.com/heed-go/heed"
)

// TestFleetKeepsServerNamedScopesApart: Transports that share a gate keep
// the limits a server names apart as one Transport does, each knowing what
// any of them learned. The server-named scopes runs go step by step
// through Transports sharing one gate: taken in turn from two or three, or
// a new one for every step, which has seen nothing answered. A spent
// search limit holds search calls sent through any of them, and no core
// call; a spent core holds a shape only another Transport saw answered.
func TestFleetKeepsServerNamedScopesApart(t *testing.T) {
	fleets := []struct {
		name string
		size int // Transports taken in turn; 0: a new one for every step
	}{
		{"two in turn", 2},
		{"three in turn", 3},
		{"a new one every step", 0},
	}
	for _, run := range namedRuns() {
		for _, fleet := range fleets {
			t.Run(run.name+"/"+fleet.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					api := &namedAPI{}
					gate := heed.NewGate()
					newTransport := func() http.RoundTripper {
						return heed.New(api, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
					}
					var kept []http.RoundTripper
					for range fleet.size {
						kept = append(kept, newTransport())
					}
					runNamed(t, api, run.steps, func(i int) http.RoundTripper {
						if fleet.size == 0 {
							return newTransport()
						}
						return kept[i%fleet.size]
					})
				})
			})
		}
	}
}

// TestFleetNamesReachAHerd: a herd of calls of a shape a Transport has
// not seen answered, sent while the fleet holds that shape's limit, is held
// to the last call: the first to send waits for the fleet's names, and so
// does every call that finds it waiting. Another shape of the host goes at
// once.
func TestFleetNamesReachAHerd(t *testing.T) {
	for _, herd := range []int{1, 4, 16} {
		t.Run("herd of "+strconv.Itoa(herd), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int64
				rt := fixtureRT(func(req *http.Request) (*http.Response, error) {
					sent.Add(1)
					h := github("core", 4000, time.Hour)(time.Now())
					status := 200
					if strings.HasPrefix(req.URL.Path, "/search") {
						h = github("search", 0, time.Minute)(time.Now())
						status = 403
					}
					return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
				})
				gate := heed.NewGate()
				policy := heed.WithPolicy(heed.Policy{MaxWait: time.Second})
				first := heed.New(rt, heed.WithGate(gate), policy)
				for _, p := range []string{"/repos/o/r", "/user", "/search/code"} {
					resp, err := first.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.github.com"+p, nil))
					if err == nil {
						readBody(t, resp)
					}
				}
				require.EqualValues(t, 3, sent.Load())
				later := heed.New(rt, heed.WithGate(gate), policy)
				var wg sync.WaitGroup
				var gated atomic.Int64
				for range herd {
					wg.Go(func() {
						_, err := later.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.github.com/search/code", nil))
						var de *heed.DeferredError
						if assert.ErrorAs(t, err, &de) && de.Attempts == 0 {
							gated.Add(1)
						}
					})
				}
				wg.Wait()
				assert.EqualValues(t, herd, gated.Load(), "every call of the held limit deferred at the gate")
				assert.EqualValues(t, 3, sent.Load(), "nothing sent into the search hold")
				start := time.Now()
				resp, err := later.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.github.com/repos/o/r", nil))
				require.NoError(t, err, "core is not held")
				readBody(t, resp)
				assert.Equal(t, start, time.Now())
			})
		})
	}
}
