package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fleet scenario: 4 worker processes, each this program run again as a
// child (HEED_BENCH_CHILD=fleet, scenario_fleet_worker.go) with its own heed
// Transport and 4 goroutines, send GETs to one rate-limited loopback
// server: a fixed window of 40 requests per wall-clock second that answers
// a request over it at once with 429 and Retry-After (the whole seconds to
// the window's end, rounded up), and serves one in 2 ms. Each variant runs
// twice, against a fresh server each time and from the same point of a
// window: once with a private gate in every process (heed.NewGate), once
// with one redisgate shared through a redis-server the scenario starts.
//
//   - published quota: every response also carries X-RateLimit-Limit,
//     -Remaining and -Reset (seconds to the window's end, rounded up).
//   - Retry-After only: nothing but the 429's Retry-After.
//
// The figure is the server's 429s per request it served. Only heed has a
// gate to share, so the other columns stay empty. The two variants run side
// by side, each with its own server; private and shared runs of a variant
// one after the other.

const (
	fleetProcs      = 4
	fleetGoroutines = 4
	fleetLimit      = 40
	fleetLatency    = 2 * time.Millisecond
	fleetEach       = 150 // requests per process: 600 in all, 15 windows
	fleetEachQuick  = 40  // 160 in all, 4 windows
	// fleetAttempts is each worker's Policy.MaxAttempts: enough that no
	// request runs out of attempts, so that every run serves them all.
	fleetAttempts = 50
)

// fleetVariant is one server of the fleet scenario.
type fleetVariant struct {
	key, label string
	publish    bool
	// nginx, when set, is the server instead of the fixed window: nginx's
	// limit_req (scenario_zoo_nginx.go), keyed by the client's address, so
	// one limit for every process of the fleet.
	nginx *nginxLimit
	// each and quick are the requests per process, in a full run and with
	// -quick.
	each, quick int
}

var fleetVariants = []fleetVariant{
	{key: "quota", label: "published quota", publish: true, each: fleetEach, quick: fleetEachQuick},
	{key: "window", label: "Retry-After only", each: fleetEach, quick: fleetEachQuick},
	{key: "nginx", label: "nginx limit_req 50r/s burst 10, Retry-After: 1", nginx: &nginxLimit{rate: 50, burst: 10, hint: true}, each: 100, quick: 60},
	{key: "nginx-slow", label: "nginx limit_req 20r/s burst 5, Retry-After: 1", nginx: &nginxLimit{rate: 20, burst: 5, hint: true}, each: 50, quick: 30},
}

func init() {
	var rows []Row
	for _, v := range fleetVariants {
		p := "fleet, " + v.label
		rows = append(rows,
			Row{Key: v.key + "-private", Label: fmt.Sprintf("%s, %d processes × %d goroutines, private gates: 429s per success (429s sent, 2xx of requests, wall time)", p, fleetProcs, fleetGoroutines), Ideal: "0"},
			Row{Key: v.key + "-shared", Label: p + ", one redisgate shared by the processes: the same", Ideal: "0"},
			Row{Key: v.key + "-cut", Label: p + ": 429s per success cut by the shared redisgate (private → shared)", Ideal: "≥ 4×"},
		)
	}
	register(&Scenario{
		Name:  "fleet",
		Order: 65,
		Rows:  rows,
		Run: func(env *Env, cs []Client) Figures {
			if _, ok := find(cs, "heed"); !ok {
				return nil
			}
			return runFleet(env)
		},
	})
}

// fleetRun is what one run of the fleet gave.
type fleetRun struct {
	err               error
	wall, ideal       time.Duration
	note              string // how ideal was worked out
	served, refused   int64  // by the server
	total, ok, failed int    // by the workers: requests, 2xx, the rest
	why               map[string]int
}

// perSuccess is the server's 429s per request it served.
func (r fleetRun) perSuccess() float64 {
	return float64(r.refused) / float64(max(r.served, 1))
}

func (r fleetRun) cell() string {
	if r.err != nil {
		return "error: " + shorten(r.err.Error())
	}
	s := fmt.Sprintf("%.3f (%d 429s, %d of %d 2xx, %s", r.perSuccess(), r.refused, r.ok, r.total, dur(r.wall))
	if r.failed > 0 {
		s += "; failed " + failedCell(herdRun{failed: r.failed, why: r.why})
	}
	return s + ")"
}

// fleetCut says how many times fewer 429s per success the shared run drew.
func fleetCut(private, shared fleetRun) string {
	p, s := private.perSuccess(), shared.perSuccess()
	switch {
	case private.err != nil || shared.err != nil:
		return "not measured"
	case p == 0 && s == 0:
		return "none to cut (0 → 0)"
	case s == 0:
		return fmt.Sprintf("all (%.3f → 0)", p)
	}
	return fmt.Sprintf("%.1f× (%.3f → %.3f)", p/s, p, s)
}

// runFleet starts a redis-server, runs the variants one after another
// (those HEED_BENCH_FLEET names, comma-separated, when it is set), stops
// redis-server, and returns heed's cells.
func runFleet(env *Env) Figures {
	out := Figures{}
	bin, err := exec.LookPath(fleetRedisBin)
	if err != nil {
		for _, v := range fleetVariants {
			for _, k := range []string{"-private", "-shared", "-cut"} {
				out.set(v.key+k, "heed", redisMissing)
			}
		}
		return out
	}
	rs, err := startRedis(bin)
	if err != nil {
		for _, v := range fleetVariants {
			for _, k := range []string{"-private", "-shared", "-cut"} {
				out.set(v.key+k, "heed", "skipped: "+shorten(err.Error()))
			}
		}
		return out
	}
	defer rs.stop()
	first := time.Now().Add(100 * time.Millisecond)
	phase := first.Sub(first.Truncate(time.Second))
	prefix := fmt.Sprintf("heed-bench:fleet:%d:", time.Now().UnixNano())
	only := strings.Split(os.Getenv("HEED_BENCH_FLEET"), ",")
	for _, v := range fleetVariants {
		if only[0] != "" && !slices.Contains(only, v.key) {
			continue
		}
		each := v.each
		if env.Quick {
			each = v.quick
		}
		private := fleetOnce(env, v, "", "", each, phase)
		shared := fleetOnce(env, v, rs.addr, prefix+v.key+":", each, phase)
		for _, r := range []struct {
			gates string
			run   fleetRun
		}{{"private", private}, {"shared", shared}} {
			fmt.Fprintf(env.Log, "bench: fleet %s, %s gates: %s, %d served, %d refused, %d failed %v, err %v\n",
				v.label, r.gates, dur(r.run.wall), r.run.served, r.run.refused, r.run.failed, r.run.why, r.run.err)
		}
		out.set(v.key+"-private", "heed", private.cell())
		out.set(v.key+"-shared", "heed", shared.cell())
		out.set(v.key+"-cut", "heed", fleetCut(private, shared))
		total := fleetProcs * each
		out.set(v.key+"-private", idealCell, fmt.Sprintf("0 (0 429s, %d of %d 2xx, %s: %s)", total, total, dur(private.ideal), private.note))
		out.set(v.key+"-shared", idealCell, fmt.Sprintf("0 (0 429s, %d of %d 2xx, %s)", total, total, dur(shared.ideal)))
	}
	return out
}

// fleetWorker is one worker process of a run.
type fleetWorker struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done bool // waited for
}

// fleetReport is what a worker prints on its standard output once done.
type fleetReport struct {
	OK     int            `json:"ok"`     // calls that ended in a 2xx
	Failed map[string]int `json:"failed"` // the others, by what they ended in
	Last   int64          `json:"last"`   // when the last call ended, Unix ns
}

// fleetOnce runs fleetProcs workers against a fresh server of variant v,
// sharing a redisgate at redisAddr under prefix, or with private gates when
// redisAddr is empty. The workers start together at the next instant phase
// into a second. Every worker has ended when it returns.
func fleetOnce(env *Env, v fleetVariant, redisAddr, prefix string, each int, phase time.Duration) (run fleetRun) {
	run.total = fleetProcs * each
	var url string
	var ideal func(start time.Time) (time.Duration, string)
	var counts func() (served, refused int64)
	if v.nginx != nil {
		ng, err := startNginx(*v.nginx)
		if err != nil {
			run.err = err
			return run
		}
		defer ng.stop() // stop is once: counts stops it first
		url = ng.url()
		ideal = func(time.Time) (time.Duration, string) { return v.nginx.ideal(0, run.total) }
		counts = func() (int64, int64) { n := ng.stop(); return n.served, n.refused }
	} else {
		lim := &fixedWindow{limit: fleetLimit, publish: v.publish, aligned: true}
		s, served, refused := limitedServer(lim, fleetLatency)
		defer s.Close()
		url = s.URL + "/v1/items"
		ideal = func(start time.Time) (time.Duration, string) { return lim.ideal(start, run.total) }
		counts = func() (int64, int64) { return served.Load(), refused.Load() }
	}

	// A bound on the run, however the workers behave: twice the windows the
	// requests need, and half a minute. Each worker's calls end by it; the
	// workers are killed 10 s later.
	limit := 2*time.Duration(run.total/fleetLimit+1)*time.Second + 30*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit+10*time.Second)
	var ws []*fleetWorker
	defer func() { // on every path: no worker outlives the run
		cancel()
		for _, w := range ws {
			w.in.Close()
			if !w.done {
				_ = w.cmd.Wait()
			}
		}
	}()
	for range fleetProcs {
		w, err := startFleetWorker(ctx, env, url, redisAddr, prefix, each, limit)
		if err != nil {
			run.err = err
			return run
		}
		ws = append(ws, w)
	}
	for i, w := range ws {
		if line, err := w.out.ReadString('\n'); strings.TrimSpace(line) != "ready" {
			run.err = fmt.Errorf("worker %d did not start: %q, %v", i, line, err)
			return run
		}
	}
	start := time.Now().Add(100 * time.Millisecond)
	if at := start.Truncate(time.Second).Add(phase); at.Before(start) {
		start = at.Add(time.Second)
	} else {
		start = at
	}
	run.ideal, run.note = ideal(start)
	for _, w := range ws {
		_, _ = fmt.Fprintf(w.in, "%d\n", start.UnixNano())
		w.in.Close()
	}
	var last int64
	run.why = map[string]int{}
	for i, w := range ws {
		b, err := io.ReadAll(w.out)
		werr := w.cmd.Wait()
		w.done = true
		var rep fleetReport
		if err == nil {
			err = werr
		}
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil {
			run.err = fmt.Errorf("worker %d said %q: %w", i, b, err)
			return run
		}
		run.ok += rep.OK
		for k, n := range rep.Failed {
			run.failed += n
			run.why[k] += n
		}
		last = max(last, rep.Last)
	}
	run.wall = time.Unix(0, last).Sub(start)
	run.served, run.refused = counts()
	if lost := run.total - run.ok - run.failed; lost != 0 {
		run.failed += lost
		run.why["not reported"] += lost
	}
	return run
}

// startFleetWorker starts one worker; it prints "ready" once it can send,
// then waits for the start instant on its standard input.
func startFleetWorker(ctx context.Context, env *Env, url, redisAddr, prefix string, each int, limit time.Duration) (*fleetWorker, error) {
	cmd := exec.CommandContext(ctx, env.Exe)
	cmd.Env = append(os.Environ(), childEnv+"=fleet", "HEED_BENCH_URL="+url,
		"HEED_BENCH_REDIS="+redisAddr, "HEED_BENCH_PREFIX="+prefix,
		"HEED_BENCH_REQUESTS="+strconv.Itoa(each), "HEED_BENCH_GOROUTINES="+strconv.Itoa(fleetGoroutines),
		"HEED_BENCH_LIMIT="+limit.String())
	cmd.Stderr = env.Log
	dieWithParent(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		in.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		in.Close()
		return nil, err
	}
	return &fleetWorker{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}
