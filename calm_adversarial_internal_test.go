package heed

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rwBody is a 101 answer's body: a ReadWriteCloser.
type rwBody struct{ io.Reader }

func (rwBody) Write(p []byte) (int, error) { return len(p), nil }
func (rwBody) Close() error                { return nil }

// answerAnything answers r with one of every kind of answer heed reads,
// at random, now and then a moment late: quotas spent and not, 429s, 503s,
// a named limit, room, errors, a panic, a 101, a cached answer, a body
// naming a limit, and more.
func answerAnything(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	if rand.IntN(4) == 0 {
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-time.After(time.Duration(rand.IntN(300)) * time.Microsecond):
		}
	}
	h := http.Header{}
	status := http.StatusOK
	var body io.ReadCloser = io.NopCloser(strings.NewReader(`{"ok":true}`))
	switch rand.IntN(22) {
	case 0:
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", "1")
	case 1:
		status = http.StatusTooManyRequests
		h.Set("Retry-After-Ms", "1")
	case 2:
		status = http.StatusServiceUnavailable
	case 3:
		panic("inner panics")
	case 4:
		h.Set("X-Ratelimit-Resource", "core")
	case 5:
		h.Set(roomField, "39/40")
	case 6:
		return nil, errors.New("reset")
	case 7:
		status = http.StatusNotFound
	case 8:
		h.Set("Retry-After", "1") // on a 200
	case 9:
		h.Set("Age", "3")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", "1")
	case 10:
		status = http.StatusSwitchingProtocols
		body = rwBody{strings.NewReader("x")}
	case 11:
		return nil, nil
	case 12:
		return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: r}, errors.New("both")
	case 13:
		body = io.NopCloser(strings.NewReader(`{"errors":[{"type":"RATE_LIMITED"}]}`))
	case 14:
		h.Set("RateLimit", `"default";r=0;t=1`)
		h.Set("RateLimit-Policy", `"default";q=10;w=1`)
	case 15:
		status = http.StatusTooManyRequests
	case 16:
		h.Set("X-RateLimit-Remaining", "3")
		h.Set("X-RateLimit-Reset", "1")
		h.Set("X-RateLimit-Remaining-Tokens", "0")
		h.Set("X-RateLimit-Reset-Tokens", "1s")
	case 17:
		status = http.StatusBadRequest
	}
	return &http.Response{StatusCode: status, Header: h, Body: body, Request: r}, nil
}

// TestCalmScopeEmptyUnderEverything: every policy shape that may go calm,
// every kind of answer, heard or not, panics everywhere, cancellations,
// several Transports at once, some scopes shared by concurrent calls.
func TestCalmScopeEmptyUnderEverything(t *testing.T) {
	policies := map[string]Policy{
		"default":  {MaxAttempts: 3},
		"one":      {MaxAttempts: 1},
		"peek":     {MaxAttempts: 2, PeekSuccess: true},
		"key":      {MaxAttempts: 3, KeyHeader: "Idempotency-Key"},
		"nobudget": {MaxAttempts: 3, Budget: Budget{Disabled: true}},
		"classify": {MaxAttempts: 2, Classify: func(req *http.Request, resp *http.Response, err error) Verdict {
			switch rand.IntN(8) {
			case 0:
				panic("classifier panics")
			case 1:
				return Verdict{Class: Deliver}
			case 2:
				return Verdict{Class: Throttled}
			case 3:
				if resp != nil {
					resp.Header.Set("X-RateLimit-Remaining", "0")
					resp.Header.Set("X-RateLimit-Reset", "1")
				}
				return Verdict{Class: Deliver}
			}
			return DefaultClassifier(req, resp, err)
		}},
	}
	for name, base := range policies {
		for _, heard := range []int{0, 1, 2} {
			t.Run(name+"/heard"+strconv.Itoa(heard), func(t *testing.T) {
				p := base
				p.MaxWait, p.MinWait = 20*time.Millisecond, time.Millisecond
				p.Backoff = EqualJitter(time.Millisecond, 2*time.Millisecond)
				p.ScopeFor = func(r *http.Request) string { return r.URL.Query().Get("s") }
				opts := []Option{WithPolicy(p)}
				switch heard {
				case 1:
					opts = append(opts, WithObserver(func(Event) {
						if rand.IntN(15) == 0 {
							panic("observer panics")
						}
					}))
				case 2:
					opts = append(opts, WithSlog(slog.New(slog.DiscardHandler)))
				}
				var trs []*Transport
				for range 3 {
					trs = append(trs, New(roundTripperFunc(answerAnything), opts...))
				}
				var wg sync.WaitGroup
				var fresh atomic.Int64
				for w := range 9 {
					tr := trs[w%len(trs)]
					wg.Go(func() {
						for range 150 {
							scope := "f" + strconv.FormatInt(fresh.Add(1)/2, 10)
							if rand.IntN(3) == 0 {
								scope = "s" + strconv.Itoa(rand.IntN(3))
							}
							method := http.MethodGet
							if rand.IntN(3) == 0 {
								method = http.MethodPost
							}
							sendRandomly(tr, scope, method)
						}
					})
				}
				wg.Wait()
				assertCalmScopeEmpty(t)
				for _, tr := range trs {
					assertNothingHeld(t, tr)
				}
			})
		}
	}
}
