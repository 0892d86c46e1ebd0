package heed_test

import (
	"io"
	"net/http"
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

// A discarded response is drained, bounded in bytes and time, and closed.

// designEndless is a body of endless zeros that counts what is read.
type designEndless struct {
	read   atomic.Int64
	closed atomic.Int32
}

func (b *designEndless) Read(p []byte) (int, error) {
	clear(p)
	b.read.Add(int64(len(p)))
	return len(p), nil
}

func (b *designEndless) Close() error { b.closed.Add(1); return nil }

// designStuck is a body whose Read blocks until it is closed.
type designStuck struct {
	once sync.Once
	done chan struct{}
	n    atomic.Int32
}

func (b *designStuck) Read([]byte) (int, error) {
	<-b.done
	return 0, io.ErrClosedPipe
}

func (b *designStuck) Close() error {
	b.n.Add(1)
	b.once.Do(func() { close(b.done) })
	return nil
}

func TestDesignDiscardedResponseDrainedAndClosed(t *testing.T) {
	t.Run("endless body: bounded in bytes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			body := &designEndless{}
			n := 0
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				n++
				if n == 1 {
					return &http.Response{StatusCode: 429, Header: hdr("Retry-After", "1"), Body: body, ContentLength: -1, Request: r}, nil
				}
				return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			})
			resp, err := heed.New(rt).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 2, n)
			assert.Less(t, body.read.Load(), int64(1<<20), "drained at most a bounded prefix")
			assert.Equal(t, int32(1), body.closed.Load())
		})
	})
	t.Run("stuck body: bounded in time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			body := &designStuck{done: make(chan struct{})}
			var sends []time.Time
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				sends = append(sends, time.Now())
				if len(sends) == 1 {
					// Not JSON: DefaultClassifier does not peek at it.
					return &http.Response{StatusCode: 429, Header: hdr("Retry-After", "1", "Content-Type", "text/html"), Body: body, ContentLength: -1, Request: r}, nil
				}
				return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			})
			resp, err := heed.New(rt).RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
			require.NoError(t, err)
			resp.Body.Close()
			require.Len(t, sends, 2)
			gap := sends[1].Sub(sends[0])
			assert.GreaterOrEqual(t, gap, time.Second)
			assert.LessOrEqual(t, gap, 2*time.Second, "a stuck body does not stall the retry")
			assert.Equal(t, int32(1), body.n.Load())
		})
	})
	for _, deferIt := range []bool{false, true} {
		name := "retry: drained whole and closed"
		if deferIt {
			name = "defer: drained whole and closed"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if deferIt {
					ctx = withDeadline(t, ctx, 3*time.Second)
				}
				rt := script(reply{status: 429, header: hdr("Retry-After", "5"), body: strings.Repeat("e", 8<<10)}, ok200)
				resp, err := heed.New(rt).RoundTrip(newRequest(t, ctx, "GET", "https://api.example/", nil))
				if deferIt {
					require.ErrorIs(t, err, heed.ErrDeferred)
				} else {
					require.NoError(t, err)
					resp.Body.Close()
				}
				first := rt.bodies[0]
				assert.Zero(t, first.Reader.(*strings.Reader).Len(), "drained")
				assert.Equal(t, 1, first.closes())
			})
		})
	}
}
