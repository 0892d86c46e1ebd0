package heed

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestCalmStress: many goroutines, few scopes, every kind of answer,
// panics of the inner transport, classifier and observer, cancellations,
// failing GetBody: at the end nothing is held anywhere.
func TestCalmStress(t *testing.T) {
	for _, v := range []struct {
		name          string
		observer      bool
		panicObserver bool
		classifier    bool
		scopes        int
	}{
		{"plain", false, false, false, 2},
		{"plain many", false, false, false, 30},
		{"observer", true, false, false, 3},
		{"panicking observer", true, true, false, 3},
		{"panicking classifier", false, false, true, 3},
		{"fresh scopes", false, false, false, -4},
		{"fresh scopes, observer", true, false, false, -3},
		{"fresh scopes, panics", true, true, true, -2},
	} {
		t.Run(v.name, func(t *testing.T) {
			inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					_, _ = io.Copy(io.Discard, r.Body)
				}
				if rand.IntN(3) == 0 {
					time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				}
				h := http.Header{}
				status := http.StatusOK
				switch rand.IntN(12) {
				case 0:
					h.Set("X-RateLimit-Remaining", strconv.Itoa(rand.IntN(5)))
					h.Set("X-RateLimit-Reset", "1")
				case 1:
					status = http.StatusTooManyRequests
					h.Set("Retry-After-Ms", "1")
				case 2:
					status = http.StatusServiceUnavailable
				case 3:
					panic("inner transport panics")
				case 4:
					h.Set("X-Ratelimit-Resource", "core")
					h.Set("X-Ratelimit-Remaining", "3")
					h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
				case 5:
					h.Set(roomField, "5/40")
				case 6:
					return nil, errors.New("connection reset")
				case 7:
					status = http.StatusNotFound
				}
				return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
			})
			p := Policy{MaxAttempts: 3, MaxWait: 20 * time.Millisecond, MinWait: time.Millisecond,
				Backoff:  EqualJitter(time.Millisecond, 2*time.Millisecond),
				ScopeFor: func(r *http.Request) string { return r.URL.Query().Get("s") }}
			if v.classifier {
				p.Classify = func(req *http.Request, resp *http.Response, err error) Verdict {
					if rand.IntN(10) == 0 {
						panic("classifier panics")
					}
					return DefaultClassifier(req, resp, err)
				}
			}
			opts := []Option{WithPolicy(p)}
			if v.observer {
				opts = append(opts, WithObserver(func(e Event) {
					if v.panicObserver && rand.IntN(20) == 0 {
						panic("observer panics")
					}
				}))
			}
			tr := New(inner, opts...)
			var wg sync.WaitGroup
			var fresh atomic.Int64
			for w := range 12 {
				wg.Go(func() {
					for i := range 300 {
						ctx, cancel := context.WithCancel(context.Background())
						switch rand.IntN(15) {
						case 0:
							cancel()
						case 1:
							go func() {
								time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
								cancel()
							}()
						}
						scope := "s" + strconv.Itoa((w+i)%max(v.scopes, 1))
						if v.scopes < 0 {
							scope = "f" + strconv.FormatInt(fresh.Add(1)/int64(-v.scopes), 10)
						}
						var body io.Reader
						method := http.MethodGet
						if rand.IntN(5) == 0 {
							method = http.MethodPut
							body = bytes.NewReader([]byte("hello"))
						}
						req, _ := http.NewRequestWithContext(ctx, method, "https://api.test/x?s="+scope, body)
						if body != nil && rand.IntN(2) == 0 {
							n := 0
							req.GetBody = func() (io.ReadCloser, error) {
								n++
								if n > 1 {
									return nil, errors.New("no body again")
								}
								return io.NopCloser(strings.NewReader("hello")), nil
							}
						}
						func() {
							defer func() { _ = recover() }()
							resp, err := tr.RoundTrip(req)
							if err == nil {
								_, _ = io.Copy(io.Discard, resp.Body)
								resp.Body.Close()
							}
						}()
						cancel()
					}
				})
			}
			wg.Wait()
			assert.Zero(t, slotsMarked(tr), "no slot is left marked")
			assertCalmScopeEmpty(t)
			tr.scopesMu.RLock()
			defer tr.scopesMu.RUnlock()
			for k, sl := range tr.scopes {
				assert.False(t, sl.bypass.taken(), "place left in %s: %x", k, sl.bypass.w.Load())
				assert.Zero(t, sl.users.Load(), "users left in %s", k)
				assert.Zero(t, sl.limiter.flight.load(), "flight left in %s", k)
			}
			tr.own.mu.Lock()
			defer tr.own.mu.Unlock()
			for k, s := range tr.own.scopes {
				assert.Zero(t, s.inflight, "gate inflight left in %q", k)
			}
		})
	}
}
