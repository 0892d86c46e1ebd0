package heed_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// The memory soak: mixed traffic to 100,000 rotating hosts and four hot
// ones, every host served by one loopback server, with 429s that hold,
// throttles in milliseconds and published quotas, watching the heap in
// use through the run. By default it runs 6 s; with -soak-memory (or in
// .ci/run) 120 s. A throttled scope is kept a minute, and then up to 1,024
// quiet ones and 1,024 forgotten ones for reuse (scope.go); one in five of
// the rotating hosts is throttled, so that all of these are full within
// the middle third of the run, and the heap of a Transport that forgets
// levels off there while one that does not grows on through the last.
var soakMemory = flag.Bool("soak-memory", false, "run the memory soak for 120 s, not 6 s")

// soakHost answers by host: a hot host ("hot…") now and then a 429 with
// Retry-After: 1 or retry-after-ms, or a published quota; a rotating host
// a 429 in milliseconds one time in five, else 200.
func soakHost(w http.ResponseWriter, r *http.Request, n int64) {
	host, _, _ := strings.Cut(r.Host, ":")
	hot := strings.HasPrefix(host, "hot")
	switch {
	case hot && n%97 == 0:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	case hot && n%13 == 0:
		w.Header().Set("Retry-After-Ms", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	case hot && n%7 == 0:
		w.Header().Set("X-RateLimit-Remaining", strconv.FormatInt(n%5, 10))
		w.Header().Set("X-RateLimit-Reset", "1")
		w.WriteHeader(http.StatusOK)
	case !hot && n%5 == 0:
		w.Header().Set("Retry-After-Ms", "20")
		w.WriteHeader(http.StatusTooManyRequests)
	default:
		w.WriteHeader(http.StatusOK)
	}
	_, _ = io.WriteString(w, "ok")
}

// TestSoakMemoryLevelsOff: through the memory soak, every call is served,
// deferred, handed back its last 429 once its attempts or the retry
// budget were spent, or ended by its own deadline during a send; in the
// long form
// the heap in use sampled in the run's last third stays within 1.25× of
// its most in the middle third (it levels off: scopes are forgotten as
// fast as they come); and no connection stays open.
func TestSoakMemoryLevelsOff(t *testing.T) {
	if testing.Short() {
		t.Skip("the memory soak takes 6 s")
	}
	length := 6 * time.Second
	if *soakMemory {
		length = 120 * time.Second
	}
	var hits atomic.Int64
	var open atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		soakHost(w, r, hits.Add(1))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	inner := &http.Transport{
		// Every host is the one loopback server.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		MaxIdleConns: 64, MaxIdleConnsPerHost: 8, IdleConnTimeout: time.Second,
	}
	// Hints in milliseconds are waited as given, not for MinWait's
	// second, so that throttled scopes come as fast as calls do.
	tr := heed.New(inner, heed.WithPolicy(heed.Policy{MaxAttempts: 4, MinWait: time.Millisecond}))
	client := &http.Client{Transport: tr}

	const rotating = 100000
	var next, calls, served, deferred, ended, returned atomic.Int64
	var failures sync.Map
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), length)
	defer cancel()
	// The heap in use, after a collection, at each fifteenth of the run,
	// the last at its end: always fifteen, so that each third holds the
	// same five.
	const sampled = 15
	var samples []uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= sampled; i++ {
			wait := time.NewTimer(time.Until(start.Add(time.Duration(i) * length / sampled)))
			select {
			case <-t.Context().Done():
				wait.Stop()
				return
			case <-wait.C:
			}
			samples = append(samples, heapInUse())
		}
	}()
	var wg sync.WaitGroup
	// Six goroutines call the rotating hosts, two the hot ones, whose
	// quotas and holds keep them waiting.
	for i := range 8 {
		hot := i < 2
		wg.Go(func() {
			for ctx.Err() == nil {
				n := next.Add(1)
				host := "h" + strconv.FormatInt(n%rotating, 10) + ".test"
				if hot {
					host = "hot" + strconv.FormatInt(n%4, 10) + ".test"
				}
				call, stop := context.WithTimeout(ctx, 2*time.Second)
				req, _ := http.NewRequestWithContext(call, http.MethodGet, "http://"+host+"/v1/items", nil)
				resp, err := client.Do(req)
				calls.Add(1)
				var de *heed.DeferredError
				switch {
				case errors.As(err, &de):
					// A worker stores the job until RetryAt.
					deferred.Add(1)
					wait := time.NewTimer(time.Until(de.RetryAt))
					select {
					case <-ctx.Done():
					case <-wait.C:
					}
					wait.Stop()
				case errors.Is(err, context.DeadlineExceeded) && call.Err() != nil:
					// The call's own deadline came during a send that
					// started within it: the caller's, not a failure.
					ended.Add(1)
				case err != nil && ctx.Err() == nil:
					failures.Store(err.Error(), true)
				case err == nil:
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						served.Add(1)
					} else {
						// Its last answer, handed back once its attempts
						// or the retry budget were spent.
						returned.Add(1)
						if resp.StatusCode != http.StatusTooManyRequests {
							failures.Store("answered "+resp.Status, true)
						}
					}
				}
				stop()
			}
		})
	}
	wg.Wait()
	<-done
	inner.CloseIdleConnections()
	require.Eventually(t, func() bool { return open.Load() == 0 }, 5*time.Second, 10*time.Millisecond, "every connection closed")

	var middle, last uint64
	third := len(samples) / 3
	for i, s := range samples {
		switch {
		case i >= 2*third:
			last = max(last, s)
		case i >= third:
			middle = max(middle, s)
		}
	}
	t.Logf("%v: %d calls (%d served, %d deferred, %d handed back their last 429, %d ended by their deadline in a send), %d requests, %d hosts; heap in use, MiB: %s",
		length, calls.Load(), served.Load(), deferred.Load(), returned.Load(), ended.Load(), hits.Load(), min(next.Load(), rotating+4), mib(samples))
	failures.Range(func(k, _ any) bool { t.Errorf("a call failed: %v", k); return true })
	require.Len(t, samples, sampled, "the heap was sampled through the run")
	if !*soakMemory {
		// Shorter than the minute a throttled scope is kept: the heap
		// still grows with them, within a bound.
		assert.Less(t, last, uint64(64<<20), "the heap in use stays under 64 MiB")
		return
	}
	assert.LessOrEqual(t, float64(last), 1.25*float64(middle), "the heap levels off")
	runtime.KeepAlive(tr)
}

// mib formats heap samples in MiB.
func mib(samples []uint64) string {
	var b strings.Builder
	for i, s := range samples {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(strconv.FormatFloat(float64(s)/(1<<20), 'f', 1, 64))
	}
	return b.String()
}
