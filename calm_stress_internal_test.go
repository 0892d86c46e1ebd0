package heed

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
			inner := roundTripperFunc(answerAnything)
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
						scope := "s" + strconv.Itoa((w+i)%max(v.scopes, 1))
						if v.scopes < 0 {
							scope = "f" + strconv.FormatInt(fresh.Add(1)/int64(-v.scopes), 10)
						}
						method := http.MethodGet
						if rand.IntN(5) == 0 {
							method = http.MethodPut
						}
						sendRandomly(tr, scope, method)
					}
				})
			}
			wg.Wait()
			assertCalmScopeEmpty(t)
			assertNothingHeld(t, tr)
		})
	}
}

// sendRandomly sends method (with a body "hello", but for a GET) to scope
// through tr: its context cancelled at once or a moment after it starts,
// one time in 15 each, its body's GetBody failing the second time one
// time in 2.
func sendRandomly(tr *Transport, scope, method string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch rand.IntN(15) {
	case 0:
		cancel()
	case 1:
		go func() {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			cancel()
		}()
	}
	var body io.Reader
	if method != http.MethodGet {
		body = bytes.NewReader([]byte("hello"))
	}
	req, _ := http.NewRequestWithContext(ctx, method, "https://api.test/x?s="+scope, body)
	if body != nil && rand.IntN(2) == 0 {
		failAgain(req)
	}
	tryRoundTrip(tr, req)
}
