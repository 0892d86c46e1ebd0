package redisgate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// The fleet check: 4 worker processes, each with its own Transport, send
// to one rate-limited loopback server, once sharing a redisgate and once
// with private gates. Every call must end in a 2xx, and with a published
// quota the shared gate must draw at least 4x fewer 429s per success.
// The measurement with its table, and the figures of a run, are the bench
// module's fleet scenario (../bench, `go run . -scenarios fleet`; see
// FLEET.md); this is its pass/fail form in redisgate's own suite, which
// CI runs with -short. It runs with -fleet or HEED_FLEET=1:
//
//	go test ./redisgate -run TestFleet -v -fleet
var fleetFlag = flag.Bool("fleet", false, "run the fleet check (also HEED_FLEET=1)")

// Environment of a worker process: the test binary run again.
const (
	workerEnv      = "HEED_FLEET_WORKER" // set: be a worker
	workerURL      = "HEED_FLEET_URL"
	workerRedis    = "HEED_FLEET_REDIS" // Redis address; empty: a private gate
	workerPrefix   = "HEED_FLEET_PREFIX"
	workerRequests = "HEED_FLEET_REQUESTS"
	workerWorkers  = "HEED_FLEET_GOROUTINES"
)

// fleetResult is what a worker reports on its standard output.
type fleetResult struct {
	OK       int      `json:"ok"`       // 2xx responses
	Other    int      `json:"other"`    // other responses
	Deferred int      `json:"deferred"` // *heed.DeferredError
	Errors   []string `json:"errors"`   // anything else
}

// fleetWorker is the main of a worker process: it waits for a line on its
// standard input, sends its requests, and prints a fleetResult.
func fleetWorker() int {
	requests, _ := strconv.Atoi(os.Getenv(workerRequests))
	goroutines, _ := strconv.Atoi(os.Getenv(workerWorkers))
	url := os.Getenv(workerURL)
	gate := heed.NewGate()
	if addr := os.Getenv(workerRedis); addr != "" {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer c.Close()
		gate = New(c, WithPrefix(os.Getenv(workerPrefix)))
	}
	tr := heed.New(nil, heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxAttempts: 50}))
	defer tr.CloseIdleConnections()

	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "worker: no start line:", err)
		return 2
	}
	var mu sync.Mutex
	var res fleetResult
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := tr.RoundTrip(req)
				cancel()
				var de *heed.DeferredError
				mu.Lock()
				switch {
				case err == nil:
					resp.Body.Close()
					if resp.StatusCode/100 == 2 {
						res.OK++
					} else {
						res.Other++
					}
				case errors.As(err, &de):
					res.Deferred++
				default:
					res.Errors = append(res.Errors, err.Error())
				}
				mu.Unlock()
			}
		})
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// fleetRun is the outcome of one run of the fleet.
type fleetRun struct {
	name    string
	took    time.Duration
	served  int64 // requests the server served
	refused int64 // 429s it sent
	workers []fleetResult
}

func (r fleetRun) perSuccess() float64 {
	if r.served == 0 {
		return 0
	}
	return float64(r.refused) / float64(r.served)
}

// runFleet starts procs workers of goroutines each, sending requests each
// to a fresh server, with a shared redisgate when redisAddr is set, and
// waits for them.
func runFleet(t *testing.T, name string, newServer func() *window, redisAddr string, procs, goroutines, requests int) fleetRun {
	t.Helper()
	api := newServer()
	srv := httptest.NewServer(api)
	defer srv.Close()
	prefix := fmt.Sprintf("fleet:%d:", time.Now().UnixNano())

	type proc struct {
		cmd   *exec.Cmd
		stdin *os.File
		out   bytes.Buffer
		err   bytes.Buffer
	}
	ps := make([]*proc, procs)
	for i := range ps {
		p := &proc{}
		p.cmd = exec.Command(os.Args[0], "-test.run=^$")
		p.cmd.Env = append(os.Environ(),
			workerEnv+"=1", workerURL+"="+srv.URL, workerRedis+"="+redisAddr, workerPrefix+"="+prefix,
			workerRequests+"="+strconv.Itoa(requests), workerWorkers+"="+strconv.Itoa(goroutines))
		r, w, err := os.Pipe()
		require.NoError(t, err)
		p.cmd.Stdin, p.stdin = r, w
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
		require.NoError(t, p.cmd.Start())
		r.Close()
		ps[i] = p
	}
	time.Sleep(200 * time.Millisecond) // let them all start up
	start := time.Now()
	for _, p := range ps {
		_, _ = p.stdin.WriteString("go\n")
		p.stdin.Close()
	}
	run := fleetRun{name: name}
	for i, p := range ps {
		err := p.cmd.Wait()
		require.NoError(t, err, "worker %d: %s", i, p.err.String())
		var res fleetResult
		require.NoError(t, json.Unmarshal(p.out.Bytes(), &res), "worker %d said %q", i, p.out.String())
		run.workers = append(run.workers, res)
	}
	run.took = time.Since(start)
	run.served, run.refused = api.served.Load(), api.refused.Load()
	return run
}

func TestFleet(t *testing.T) {
	if !*fleetFlag && os.Getenv("HEED_FLEET") != "1" {
		t.Skip("the fleet measurement runs with -fleet or HEED_FLEET=1")
	}
	s := startRedis(t)
	const procs, goroutines, limit, latency = 4, 4, 40, 2 * time.Millisecond
	requests := 150 // per worker: 600 in all, 15 windows
	if testing.Short() {
		requests = 30
	}
	runs := []struct {
		name    string
		shared  bool
		publish bool
	}{
		{"published quota, private gates", false, true},
		{"published quota, shared redisgate", true, true},
		{"Retry-After only, private gates", false, false},
		{"Retry-After only, shared redisgate", true, false},
	}
	var results []fleetRun
	for _, r := range runs {
		addr := ""
		if r.shared {
			addr = s.addr
		}
		newServer := func() *window {
			w := newWindow(limit, r.publish)
			w.latency = latency
			return w
		}
		run := runFleet(t, r.name, newServer, addr, procs, goroutines, requests)
		results = append(results, run)
		t.Logf("%-36s %6.2fs  served %4d  429s %4d  429s/success %.3f", r.name, run.took.Seconds(), run.served, run.refused, run.perSuccess())
		for i, w := range run.workers {
			assert.Empty(t, w.Errors, "worker %d", i)
			assert.Equal(t, requests, w.OK, "worker %d: every call succeeded", i)
		}
	}
	quota := cut(results[0], results[1])
	hints := cut(results[2], results[3])
	t.Logf("shared redisgate cuts 429s per success: %s with a published quota, %s with Retry-After only", quota, hints)
	if testing.Short() {
		return
	}
	assert.GreaterOrEqual(t, results[0].perSuccess(), 4*results[1].perSuccess(),
		"a shared redisgate cuts 429s per success at least 4x against private gates")
	assert.GreaterOrEqual(t, results[2].perSuccess(), 4*results[3].perSuccess(),
		"with Retry-After only too, once the shared gate has learned the window")
}

// cut says how many times fewer 429s per success shared drew than private.
func cut(private, shared fleetRun) string {
	switch {
	case shared.perSuccess() == 0 && private.perSuccess() == 0:
		return "none to cut"
	case shared.perSuccess() == 0:
		return fmt.Sprintf("from %.3f to 0", private.perSuccess())
	}
	return fmt.Sprintf("%.1fx", private.perSuccess()/shared.perSuccess())
}
