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
// allocs/op count the client alone). Thirty short rounds take the clients
// in rotating order; each figure is the median over the rounds, and the
// ratio is the median of each round's ratio to bare, which cancels drift
// in whatever else the machine is doing. The same rounds over an in-memory
// transport give each library's own cost per call, without the network's
// noise, as time and allocations beyond bare's.
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
			{Key: "own", Label: "overhead: the library's own cost, in-memory transport", Ideal: "+0 ns, +0 allocs"},
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
	rounds, benchtime := 30, "100ms"
	if env.Quick {
		rounds, benchtime = 4, "50ms"
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

	// bare is always measured: the ratios need it.
	all := cs
	if _, ok := find(cs, "bare"); !ok {
		b, _ := clientNamed("bare")
		all = append([]Client{b}, cs...)
	}
	bi, _ := find(all, "bare")
	loop := benchRounds(env, "loopback", all, nil, "http://"+addr+"/v1/models/m", rounds)
	mem := benchRounds(env, "in-memory", all, memTransport{}, "http://api.invalid/v1/models/m", rounds)
	for i, c := range all {
		if _, shown := find(cs, c.Name); !shown {
			continue
		}
		if loop.failed[i] || mem.failed[i] {
			f.set("ns", c.Name, "failed")
			continue
		}
		f.set("ns", c.Name, fmt.Sprintf("%.0f", loop.median(i, nsPerOp)))
		f.set("bytes", c.Name, fmt.Sprint(loop.median(i, func(r testing.BenchmarkResult) float64 { return float64(r.AllocedBytesPerOp()) })))
		f.set("allocs", c.Name, fmt.Sprint(loop.median(i, func(r testing.BenchmarkResult) float64 { return float64(r.AllocsPerOp()) })))
		f.set("ratio", c.Name, fmt.Sprintf("%.2f×", loop.ratio(i, bi)))
		f.set("own", c.Name, fmt.Sprintf("%+.0f ns, %+.0f allocs",
			mem.median(i, nsPerOp)-mem.median(bi, nsPerOp),
			mem.median(i, func(r testing.BenchmarkResult) float64 { return float64(r.AllocsPerOp()) })-
				mem.median(bi, func(r testing.BenchmarkResult) float64 { return float64(r.AllocsPerOp()) })))
	}
	return f
}

// rounds holds results[r][i], client i's run in round r.
type rounds struct {
	results [][]testing.BenchmarkResult
	failed  []bool
}

// benchRounds benchmarks every client through next (nil: real
// connections) in rounds of rotating order, so that no client always
// follows the same one.
func benchRounds(env *Env, what string, all []Client, next http.RoundTripper, url string, n int) rounds {
	doers := make([]Doer, len(all))
	for i, c := range all {
		doers[i] = c.New(next)
		defer doers[i].Close()
		for range 200 { // warm the connection pool and caches
			doers[i].Do(&Call{Ctx: context.Background(), Method: http.MethodGet, URL: url})
		}
	}
	out := rounds{results: make([][]testing.BenchmarkResult, n), failed: make([]bool, len(all))}
	for r := range out.results {
		out.results[r] = make([]testing.BenchmarkResult, len(all))
		for k := range all {
			i := (k + r) % len(all)
			res, ok := benchOnce(doers[i], url)
			out.results[r][i] = res
			out.failed[i] = out.failed[i] || !ok
			fmt.Fprintf(env.Log, "bench: overhead %s round %d %s: %s %s\n", what, r+1, all[i].Name, res.String(), res.MemString())
		}
	}
	return out
}

// median returns the median over the rounds of client i's measure.
func (rs rounds) median(i int, measure func(testing.BenchmarkResult) float64) float64 {
	var xs []float64
	for _, r := range rs.results {
		xs = append(xs, measure(r[i]))
	}
	return medianOf(xs)
}

// ratio returns the median over the rounds of client i's time per
// operation relative to client base's in the same round.
func (rs rounds) ratio(i, base int) float64 {
	var xs []float64
	for _, r := range rs.results {
		xs = append(xs, nsPerOp(r[i])/nsPerOp(r[base]))
	}
	return medianOf(xs)
}

// nsPerOp is a result's time per operation, unrounded.
func nsPerOp(r testing.BenchmarkResult) float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.T) / float64(r.N)
}

// medianOf returns the median of xs (the lower one of an even count).
func medianOf[T int64 | float64](xs []T) T {
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
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
