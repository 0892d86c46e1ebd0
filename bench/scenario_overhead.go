package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sort"
	"testing"
)

// overhead: the success path, a GET answered 200 with 1 KiB, measured with
// testing.Benchmark against a server in a child process (so that B/op and
// allocs/op count the client alone). Twelve short rounds alternate between the
// clients and the fastest round of each counts, which filters out noise
// from whatever else the machine is doing.
func init() {
	register(&Scenario{
		Name:  "overhead",
		Order: 80,
		Alone: true,
		Rows: []Row{
			{Key: "ns", Label: "overhead: ns/op (GET, 1 KiB answer)", Ideal: "= bare"},
			{Key: "bytes", Label: "overhead: B/op", Ideal: "= bare"},
			{Key: "allocs", Label: "overhead: allocs/op", Ideal: "= bare"},
			{Key: "ratio", Label: "overhead: time relative to bare", Ideal: "1.00×"},
		},
		Run: runOverhead,
	})
}

// benchOnce runs one testing.Benchmark of d.
func benchOnce(d Doer, url string) (testing.BenchmarkResult, bool) {
	ok := true
	call := &Call{Ctx: context.Background(), Method: http.MethodGet, URL: url}
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			r := d.Do(call)
			if r.Err != nil || r.Status != http.StatusOK || r.Read != len(overheadBody) {
				ok = false
			}
		}
	})
	return res, ok
}

func runOverhead(env *Env, cs []Client) Figures {
	f := Figures{}
	rounds, benchtime := 12, "300ms"
	if env.Quick {
		rounds, benchtime = 3, "100ms"
	}
	testing.Init()
	if err := flag.Set("test.benchtime", benchtime); err != nil {
		fmt.Fprintln(env.Log, "bench: overhead:", err)
		return f
	}
	addr, stop, err := startServer(env)
	if err != nil {
		fmt.Fprintln(env.Log, "bench: overhead:", err)
		return f
	}
	defer stop()
	url := "http://" + addr + "/v1/models/m"

	// bare is always measured: the ratio needs it.
	all := cs
	if _, ok := find(cs, "bare"); !ok {
		b, _ := clientNamed("bare")
		all = append([]Client{b}, cs...)
	}
	doers := make([]Doer, len(all))
	for i, c := range all {
		doers[i] = c.New()
		defer doers[i].Close()
		for range 200 { // warm the connection pool and caches
			doers[i].Do(&Call{Ctx: context.Background(), Method: http.MethodGet, URL: url})
		}
	}
	results := make([][]testing.BenchmarkResult, len(all))
	failed := make([]bool, len(all))
	for r := range rounds {
		for i := range all {
			// Alternate the order each round, so that no client always
			// follows the same one.
			j := i
			if r%2 == 1 {
				j = len(all) - 1 - i
			}
			res, ok := benchOnce(doers[j], url)
			results[j] = append(results[j], res)
			failed[j] = failed[j] || !ok
			fmt.Fprintf(env.Log, "bench: overhead round %d %s: %s %s\n", r+1, all[j].Name, res.String(), res.MemString())
		}
	}
	best := make([]testing.BenchmarkResult, len(all))
	for i, rs := range results {
		sort.Slice(rs, func(a, b int) bool { return rs[a].NsPerOp() < rs[b].NsPerOp() })
		best[i] = rs[0]
	}
	bi, _ := find(all, "bare")
	bare := float64(best[bi].T) / float64(best[bi].N)
	for i, c := range all {
		if _, shown := find(cs, c.Name); !shown {
			continue
		}
		if failed[i] {
			f.set("ns", c.Name, "failed")
			continue
		}
		ns := float64(best[i].T) / float64(best[i].N)
		f.set("ns", c.Name, fmt.Sprintf("%.0f", ns))
		f.set("bytes", c.Name, fmt.Sprint(best[i].AllocedBytesPerOp()))
		f.set("allocs", c.Name, fmt.Sprint(best[i].AllocsPerOp()))
		f.set("ratio", c.Name, fmt.Sprintf("%.2f×", ns/bare))
	}
	return f
}

// find returns the index of the client called name.
func find(cs []Client, name string) (int, bool) {
	for i, c := range cs {
		if c.Name == name {
			return i, true
		}
	}
	return 0, false
}
