package heed_test

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// heapInUse is the heap in use after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMillionHostsBoundedHeap: a million one-request hosts through one
// Transport, from 8 goroutines, leave at most 16 MiB of heap growth once
// collected: a scope whose history is only successes is forgotten. Under
// the race detector, a tenth of the hosts, against the same bound.
func TestMillionHostsBoundedHeap(t *testing.T) {
	total := 1000000
	if raceEnabled || testing.Short() {
		total /= 10
	}
	for _, tc := range []struct {
		name  string
		share int // of total
		opts  []heed.Option
	}{
		{"the default policy", 1, nil},
		{"routes and a Limit, a fifth as many hosts", 5, []heed.Option{heed.WithRoute("/v1/", heed.Policy{Limit: heed.Limit{Rate: 1e9, InFlight: 64}}), heed.WithRoute("POST /v1/images/", heed.Policy{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := total / tc.share
			tr := heed.New(newOKRT(), tc.opts...)
			before := heapInUse()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					req, err := http.NewRequest(http.MethodGet, "https://h.example/v1/models", nil)
					require.NoError(t, err)
					for i := next.Add(1); i <= int64(hosts); i = next.Add(1) {
						r := *req
						u := *req.URL
						u.Host = "h" + strconv.FormatInt(i, 10) + ".example"
						r.URL = &u
						resp, err := tr.RoundTrip(&r)
						if err != nil || resp.StatusCode != http.StatusOK {
							t.Errorf("request %d: %v", i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			growth := int64(heapInUse()) - int64(before)
			t.Logf("%d hosts: heap grew %.2f MiB", hosts, float64(growth)/(1<<20))
			assert.Less(t, growth, int64(16<<20), "heap growth after a collection")
			runtime.KeepAlive(tr)
		})
	}
}
