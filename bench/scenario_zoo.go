package main

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// The zoo: herd scenarios against the rate limiters people deploy in front
// of their APIs, each at two or three parameter sets, so that a client's
// pacing is measured on every shape of limit rather than on one it suits:
//
//   - zoo-nginx-429, zoo-nginx-503 (scenario_zoo_nginx.go): nginx's
//     limit_req, a leaky bucket with a burst, answering 429 with
//     Retry-After: 1, or its default 503 with no hint.
//   - zoo-httprate (scenario_zoo_httprate.go): go-chi/httprate's sliding
//     window counter, with its default Retry-After and X-RateLimit-*.
//   - zoo-bucket-seconds (scenario_zoo_bucket.go): a token bucket answering
//     429 with Retry-After in whole seconds, rounded up.
//   - zoo-concurrency (scenario_zoo_concurrency.go): at most N requests in
//     flight, each taking a fixed time; 429 with no hint beyond N.
//
// Within a set the clients run one after another, each against a fresh
// server of its own that starts zooLead before its herd, as the herd
// scenarios run; the sets of a scenario run one after another too, and the
// scenarios side by side. Every client is configured as in every other
// scenario (client.go): nothing is tuned to a limiter. The ideal of a set
// is the wall time a client that knew the limit exactly would need, worked
// out from the parameters alone: from its first request to its last send
// (for a concurrency limit, to its last answer, since that limit is on
// answering).

const (
	// zooLead is how long before its herd's first request a server starts.
	zooLead = 100 * time.Millisecond
	// zooQuickCap bounds a client's run with -quick, as herdCap does in a
	// full run: peers backing off from a limiter without hints would
	// otherwise take up to half a minute.
	zooQuickCap = 20 * time.Second
	// zooQuickTotal and zooQuickWorkers are the herd of -quick, which runs
	// each scenario's first set only.
	zooQuickTotal   = 100
	zooQuickWorkers = 16
)

// zooScenario is one scenario of the zoo.
type zooScenario struct {
	name  string
	order int
	// refusal names what the server refuses with, for the load row:
	// "429s" or "503s".
	refusal string
	sets    []zooSet
	// quickOmits are the clients -quick leaves out, to keep it short:
	// peers that back off here for many seconds.
	quickOmits []string
}

// zooSet is one parameter set of a zoo scenario: a limit and a herd of
// total GETs from workers goroutines.
type zooSet struct {
	limit          zooLimit
	total, workers int
}

// zooLimit is the parameters of one server of the zoo: an nginxLimit,
// httprateLimit, bucketLimit or concurrencyLimit.
type zooLimit interface {
	key() string    // unique within its scenario
	String() string // for the label: "100/s, burst 10"
	// start starts a fresh server with these parameters.
	start() (zooServer, error)
	// ideal is the wall time a client that knew the limit would need for
	// total requests, the first sent lead after the server started, and a
	// note on how it was worked out.
	ideal(lead time.Duration, total int) (time.Duration, string)
}

// zooServer is a running server of the zoo.
type zooServer interface {
	// url is what the herd GETs.
	url() string
	// born is when the server started counting: its limiter was made.
	born() time.Time
	// stop stops the server and returns its own count of what it saw.
	stop() zooCounts
}

// zooCounts is a server's own count of requests.
type zooCounts struct {
	received, served, refused int64 // served: 200; refused: 429 or 503
}

// zooRun is what one client's run of a set gave.
type zooRun struct {
	herdRun
	served int64  // the server's count of 200s; herdRun.ok is the client's
	note   string // how the ideal was worked out
	err    error  // the server did not start
}

// zooScenarios are the zoo's scenarios, in the order they registered.
var zooScenarios []*zooScenario

// register adds the scenario to the registry: three rows per set, the
// first set's measured by -quick as well, the others in a full run only.
func (z *zooScenario) register() {
	zooScenarios = append(zooScenarios, z)
	var rows []Row
	for i, set := range z.sets {
		p := fmt.Sprintf("%s (%s)", z.name, set.limit)
		rows = append(rows,
			Row{Key: set.limit.key() + "-time", Label: p + ": wall time (× ideal)", Full: i > 0},
			Row{Key: set.limit.key() + "-load", Label: fmt.Sprintf("%s: requests received / %s sent", p, z.refusal), Full: i > 0},
			Row{Key: set.limit.key() + "-failed", Label: p + ": requests failed (error or non-200)", Ideal: "0", Full: i > 0},
		)
	}
	register(&Scenario{Name: z.name, Order: z.order, Rows: rows, Run: z.run})
}

// runSets are the sets a run measures: with quick, the first set with a
// smaller herd.
func (z *zooScenario) runSets(quick bool) []zooSet {
	if !quick {
		return z.sets
	}
	s := z.sets[0]
	s.total, s.workers = zooQuickTotal, zooQuickWorkers
	return []zooSet{s}
}

// run measures every set for every client, one run after another.
func (z *zooScenario) run(env *Env, cs []Client) Figures {
	limit := herdCap
	if env.Quick {
		limit = zooQuickCap
		cs = exceptClients(cs, z.quickOmits...)
	}
	out := Figures{}
	for _, set := range z.runSets(env.Quick) {
		k := set.limit.key()
		ideal, note := set.limit.ideal(zooLead, set.total)
		out.set(k+"-time", idealCell, fmt.Sprintf("%s (%d GETs from %d goroutines; %s)", dur(ideal), set.total, set.workers, note))
		out.set(k+"-load", idealCell, fmt.Sprintf("%d / 0", set.total))
		for _, c := range cs {
			r := zooOnce(set, c, limit)
			if r.err != nil {
				fmt.Fprintf(env.Log, "bench: %s %s %s: %v\n", z.name, set.limit, c.Name, r.err)
				for _, row := range []string{"-time", "-load", "-failed"} {
					out.set(k+row, c.Name, zooSkipped(r.err))
				}
				continue
			}
			fmt.Fprintf(env.Log, "bench: %s %s %s: %s, %d received, %d served, %d refused, %d failed %v\n",
				z.name, set.limit, c.Name, dur(r.wall), r.received, r.served, r.refused, r.failed, r.why)
			out.set(k+"-time", c.Name, timeCell(r.herdRun))
			out.set(k+"-load", c.Name, fmt.Sprintf("%d / %d", r.received, r.refused))
			out.set(k+"-failed", c.Name, failedCell(r.herdRun))
		}
	}
	return out
}

// exceptClients keeps the clients not named, in their order.
func exceptClients(cs []Client, names ...string) []Client {
	var out []Client
	for _, c := range cs {
		if !slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// zooOnce runs one client's herd against a fresh server of set, every
// request ending by limit after the herd's start, and stops the server.
func zooOnce(set zooSet, c Client, limit time.Duration) zooRun {
	srv, err := set.limit.start()
	if err != nil {
		return zooRun{err: err}
	}
	d := c.New(nil)
	r := herdSend(d, srv.url(), srv.born().Add(zooLead), limit, set.total, set.workers)
	d.Close()
	n := srv.stop()
	run := zooRun{herdRun: r, served: n.served}
	run.received, run.refused = n.received, n.refused
	run.ideal, run.note = set.limit.ideal(r.begun.Sub(srv.born()), set.total)
	return run
}

// zooSkipped is a cell for a run whose server did not start.
func zooSkipped(err error) string {
	if s, ok := err.(skipError); ok {
		return "skipped: " + string(s)
	}
	return "error: " + shorten(err.Error())
}

// skipError is a server that cannot run here, and why: the program it
// needs is not installed.
type skipError string

func (s skipError) Error() string { return string(s) }

// loopServer is a zoo server in this process: a recording loopback server
// (server.go) and its counts of what it served and refused.
type loopServer struct {
	s               *server
	t0              time.Time
	served, refused *atomic.Int64
}

// limiterServer is a loopServer whose limiter decides every request, as
// the herd scenarios' servers are (limitedServer).
func limiterServer(lim admitter) *loopServer {
	t0 := time.Now()
	s, served, refused := limitedServer(lim, 0)
	return &loopServer{s: s, t0: t0, served: served, refused: refused}
}

func (l *loopServer) url() string     { return l.s.URL + "/v1/items" }
func (l *loopServer) born() time.Time { return l.t0 }

func (l *loopServer) stop() zooCounts {
	l.s.Close() // waits for the requests it is answering
	return zooCounts{received: int64(len(l.s.got())), served: l.served.Load(), refused: l.refused.Load()}
}
