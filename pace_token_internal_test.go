package heed

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTripFunc answers with its own function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// onTakeGate is a QuotaGate that holds its scope for 2 s at its first
// Take, running then, once, what turn says: in the middle of a send's pass
// through the gate.
type onTakeGate struct {
	turn  func()
	taken int
}

func (g *onTakeGate) NotBefore(context.Context, string) (time.Time, error) { return time.Time{}, nil }
func (g *onTakeGate) Hold(context.Context, string, time.Time) error        { return nil }
func (g *onTakeGate) Done(context.Context, string, *Quota, bool) error     { return nil }
func (g *onTakeGate) Take(context.Context, string) (time.Time, error) {
	g.taken++
	if g.taken == 2 { // the second send's first pass
		g.turn()
		return time.Now().Add(2 * time.Second), nil
	}
	return time.Time{}, nil
}

// TestNoTokenGivenBackThatWasNotTaken: a send that asked the pace while
// the limiter was off holds no token. If the limiter turns on before the
// gate sends it to wait, the send gives nothing back: a token given back
// that was never taken would be a free send past the pace.
func TestNoTokenGivenBackThatWasNotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
		})
		gate := &onTakeGate{}
		tr := New(ok, WithGate(gate))
		req, err := http.NewRequestWithContext(t.Context(), "GET", "https://api.example/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req) // the scope exists, its limiter off
		require.NoError(t, err)
		resp.Body.Close()
		a := &tr.scopes["api.example"].limiter
		require.False(t, a.active.Load())
		var on time.Time
		gate.turn = func() { // the limiter turns on, every token issued taken
			a.mu.Lock()
			defer a.mu.Unlock()
			on = time.Now()
			a.enabled, a.fillRate, a.capacity, a.lastFill = true, 1, 5, on
			a.granted, a.issued = 0, 0
			a.active.Store(true)
		}
		resp, err = tr.RoundTrip(req.Clone(t.Context()))
		require.NoError(t, err)
		resp.Body.Close()
		a.mu.Lock()
		defer a.mu.Unlock()
		assert.Equal(t, 1.0, a.issued, "the send took one token after its wait")
		refilled := time.Since(on).Seconds() * 1 // the rate it turned on at
		assert.LessOrEqual(t, a.granted, refilled+1e-9, "granted is what the rate refilled: no token given back that was not taken")
	})
}
