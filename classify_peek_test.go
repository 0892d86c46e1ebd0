package heed_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// stallingBody gives nothing until released, then its text; Close releases
// a blocked Read with an error.
type stallingBody struct {
	release chan struct{}
	closed  chan struct{}
	once    sync.Once
	r       io.Reader
}

func newStallingBody(text string) *stallingBody {
	return &stallingBody{release: make(chan struct{}), closed: make(chan struct{}), r: strings.NewReader(text)}
}

func (b *stallingBody) Read(p []byte) (int, error) {
	select {
	case <-b.release:
		return b.r.Read(p)
	case <-b.closed:
		return 0, io.ErrClosedPipe
	}
}

func (b *stallingBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// A 429 whose body stalls after its headers is classified by its headers
// within half a second, instead of holding the RoundTrip.
func TestStalledErrorBodyDoesNotHoldTheClassifier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := newStallingBody(`{"error":{"code":"insufficient_quota"}}`)
		resp := &http.Response{StatusCode: 429, Header: hdr("Content-Type", "application/json"), Body: body}
		start := time.Now()
		v := heed.DefaultClassifier(nil, resp, nil)
		assert.Equal(t, heed.Throttled, v.Class, "without its body a 429 is a rate limit")
		assert.Equal(t, 500*time.Millisecond, time.Since(start))
		// The body, once it comes, is whole for the caller.
		close(body.release)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, `{"error":{"code":"insufficient_quota"}}`, string(b))
		require.NoError(t, resp.Body.Close())
	})
}

func TestStalledErrorBodyIsDiscardedOnRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bodies []*stallingBody
		n := 0
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n++
			if n == 1 {
				b := newStallingBody(`{"error":"slow"}`)
				bodies = append(bodies, b)
				return &http.Response{StatusCode: 429, Header: hdr("Content-Type", "application/json", "Retry-After", "2"), Body: b, Request: r}, nil
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		start := time.Now()
		resp, err := heed.New(rt).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		// 0.5s to classify, then the 2s hint; the 0.25s spent giving up on
		// draining the body is part of the wait, not added to it.
		assert.Equal(t, 2500*time.Millisecond, time.Since(start))
		select {
		case <-bodies[0].closed:
		default:
			t.Fatal("the stalled body was not closed")
		}
	})
}
