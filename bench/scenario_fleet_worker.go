package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/redisgate"
)

// childFleet is a worker of the fleet scenario: one heed Transport, with a
// redisgate on HEED_BENCH_REDIS under HEED_BENCH_PREFIX or else a private
// gate, and HEED_BENCH_GOROUTINES goroutines that send HEED_BENCH_REQUESTS
// GETs to HEED_BENCH_URL between them. It prints "ready", reads the start
// instant (Unix ns) from its standard input, waits for it, sends, and
// prints a fleetReport. Every call ends by HEED_BENCH_LIMIT after the
// start.
func childFleet() int {
	each, err1 := strconv.Atoi(os.Getenv("HEED_BENCH_REQUESTS"))
	goroutines, err2 := strconv.Atoi(os.Getenv("HEED_BENCH_GOROUTINES"))
	limit, err3 := time.ParseDuration(os.Getenv("HEED_BENCH_LIMIT"))
	if err1 != nil || err2 != nil || err3 != nil {
		fmt.Fprintln(os.Stderr, "bench: fleet worker: bad environment")
		return 2
	}
	gate := heed.NewGate()
	if addr := os.Getenv("HEED_BENCH_REDIS"); addr != "" {
		rc := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer rc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := rc.Ping(ctx).Err()
		cancel()
		if err != nil { // a gate that fails open would measure private gates
			fmt.Fprintln(os.Stderr, "bench: fleet worker: redis:", err)
			return 1
		}
		gate = redisgate.New(rc, redisgate.WithPrefix(os.Getenv("HEED_BENCH_PREFIX")))
	}
	t := transportOr(nil)
	d := &heedClient{t: t, hc: &http.Client{Transport: heed.New(t,
		heed.WithGate(gate), heed.WithPolicy(heed.Policy{MaxAttempts: fleetAttempts}))}}
	defer d.Close()

	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	ns, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil || perr != nil {
		fmt.Fprintf(os.Stderr, "bench: fleet worker: no start instant: %q, %v\n", line, err)
		return 2
	}
	start := time.Unix(0, ns)
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(limit))
	defer cancel()
	time.Sleep(time.Until(start))

	rep := fleetReport{Failed: map[string]int{}}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for next.Add(1) <= int64(each) {
				r := d.Do(&Call{Ctx: ctx, Method: http.MethodGet, URL: os.Getenv("HEED_BENCH_URL")})
				now := time.Now().UnixNano()
				mu.Lock()
				switch {
				case r.Err != nil:
					rep.Failed[errKind(r.Err)]++
				case r.Status/100 != 2:
					rep.Failed[strconv.Itoa(r.Status)+" returned"]++
				default:
					rep.OK++
				}
				rep.Last = max(rep.Last, now)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Which process finished when: the figure is the last one's.
	fmt.Fprintf(os.Stderr, "bench: fleet worker %d: %d ok, %d failed, done %s after the start\n",
		os.Getpid(), rep.OK, len(rep.Failed), dur(time.Unix(0, rep.Last).Sub(start)))
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 1
	}
	return 0
}
