package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childEnv names the environment variable that makes this program a child
// process of a scenario rather than the bench itself: "upload" sends one
// upload with one client, "serve" runs the overhead server, "fleet" is a
// worker of the fleet scenario (scenario_fleet_worker.go).
const childEnv = "HEED_BENCH_CHILD"

// runChild runs the child process named kind and returns its exit code.
func runChild(kind string) int {
	switch kind {
	case "upload":
		return childUpload()
	case "serve":
		return childServe()
	case "fleet":
		return childFleet()
	}
	fmt.Fprintf(os.Stderr, "bench: unknown child %q\n", kind)
	return 2
}

// uploadResult is what an upload child prints on stdout.
type uploadResult struct {
	Status int    `json:"status"`
	Err    string `json:"err,omitempty"`
	HWMKiB int64  `json:"hwm_kib"` // VmHWM of the child, from /proc/self/status
	Killed bool   `json:"-"`       // still running past its limit
}

// childUpload PUTs the file at HEED_BENCH_FILE to HEED_BENCH_URL with the
// client HEED_BENCH_CLIENT, within HEED_BENCH_LIMIT, and reports how it
// ended.
func childUpload() int {
	c, ok := clientNamed(os.Getenv("HEED_BENCH_CLIENT"))
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: no such client")
		return 2
	}
	f, err := os.Open(os.Getenv("HEED_BENCH_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	limit, err := time.ParseDuration(os.Getenv("HEED_BENCH_LIMIT"))
	if err != nil {
		limit = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	d := c.New(nil)
	r := d.Do(&Call{Ctx: ctx, Method: http.MethodPut, URL: os.Getenv("HEED_BENCH_URL"), File: f, Size: fi.Size(),
		Header: map[string]string{"Content-Type": "application/octet-stream"}})
	d.Close()
	out := uploadResult{Status: r.Status, HWMKiB: vmHWM()}
	if r.Err != nil {
		out.Err = r.Err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// vmHWM returns this process's peak resident set size in KiB, or 0.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// runUpload starts an upload child and returns its report and its peak
// RSS in KiB (VmHWM, or the kernel's rusage when /proc gives none). A child
// still running 2 s past limit is killed; its report then says so.
func runUpload(env *Env, client, url, file string, limit time.Duration) (uploadResult, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit+2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Exe)
	cmd.Env = append(os.Environ(), childEnv+"=upload", "HEED_BENCH_CLIENT="+client, "HEED_BENCH_URL="+url,
		"HEED_BENCH_FILE="+file, "HEED_BENCH_LIMIT="+limit.String())
	cmd.Stderr = env.Log
	out, err := cmd.Output()
	var res uploadResult
	var maxrss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxrss = ru.Maxrss // KiB on Linux
		}
	}
	if ctx.Err() != nil {
		res.Killed = true
		return res, maxrss, nil
	}
	if err != nil {
		return res, 0, err
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, 0, fmt.Errorf("child said %q: %w", out, err)
	}
	peak := res.HWMKiB
	if peak == 0 {
		peak = maxrss
	}
	return res, peak, nil
}

// overheadBody is what the overhead server answers: 1 KiB.
var overheadBody = []byte(strings.Repeat("0123456789abcdef", 64))

// childServe serves 200 with a 1 KiB body on 127.0.0.1, prints its
// address, and exits when its standard input closes.
func childServe() int {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(overheadBody)))
		_, _ = w.Write(overheadBody)
	})}
	go func() { _ = srv.Serve(l) }()
	fmt.Println(l.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
	return 0
}

// startServer starts the overhead server in a child process, so that its
// allocations are not counted against the clients. stop ends it.
func startServer(env *Env) (addr string, stop func(), err error) {
	cmd := exec.Command(env.Exe)
	cmd.Env = append(os.Environ(), childEnv+"=serve")
	cmd.Stderr = env.Log
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		in.Close()
		_ = cmd.Wait()
		return "", nil, fmt.Errorf("overhead server: %w", err)
	}
	return strings.TrimSpace(line), func() {
		in.Close()
		_ = cmd.Wait()
	}, nil
}
