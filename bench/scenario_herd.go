package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The herd scenarios: many goroutines send through ONE http.Client to a
// rate-limited loopback server. A client that shares what one throttled
// response taught it among all its requests draws few 429s and still
// finishes as fast as the limit allows; one that lets every goroutine learn
// on its own collects a 429 per goroutine each time the limit bites.
//
//   - herd-window: a fixed window of 40 requests a second that starts with
//     the first request after the last window ended, as a Redis INCR and
//     EXPIRE limiter or a per-key gateway window does; a request over it
//     gets 429 with Retry-After, the whole seconds to the window's end
//     rounded up.
//   - herd-quota: the same server, and every response (200 and 429)
//     publishes the quota: X-RateLimit-Limit, X-RateLimit-Remaining and
//     X-RateLimit-Reset (seconds to the window's end, rounded up).
//   - herd-window-aligned: herd-window with windows aligned to wall-clock
//     seconds. Whole-second hints round the window's end up: see
//     fixedWindow.ideal for the floor that puts on every client.
//   - herd-quota-unix: aligned windows publishing X-RateLimit-Reset as the
//     Unix time of the window's end, as GitHub sends it: the exact instant.
//   - herd-bucket (scenario_herd_bucket.go): a token bucket answering 429
//     with retry-after-ms only.
//
// The clients of a scenario run one after another, each against its own
// server. With aligned windows each starts at the same point of a window,
// chosen arbitrarily but for the last tenth of a second, and the ideal is
// worked out from that point.

const (
	windowLimit   = 40
	windowWorkers = 16
	windowTotal   = 200
	// herdCap bounds one client's run: no request starts after it, and
	// every request's context ends at it.
	herdCap = 60 * time.Second
	// herdLatestPhase is the latest point of a wall-clock second a herd
	// starts at: an aligned window's first then has 100 ms left at least.
	herdLatestPhase = 900 * time.Millisecond
)

func init() {
	variants := []struct {
		name  string
		order int
		lim   fixedWindow
	}{
		{"herd-window", 60, fixedWindow{limit: windowLimit}},
		{"herd-quota", 62, fixedWindow{limit: windowLimit, publish: true}},
		{"herd-window-aligned", 63, fixedWindow{limit: windowLimit, aligned: true}},
		{"herd-quota-unix", 64, fixedWindow{limit: windowLimit, publish: true, aligned: true, unix: true}},
	}
	for _, v := range variants {
		register(&Scenario{
			Name:  v.name,
			Order: v.order,
			Rows:  herdRows(v.name, windowTotal, windowWorkers),
			Run: func(env *Env, cs []Client) Figures {
				if env.Quick {
					cs = onlyClients(cs, "retryablehttp", "heed")
				}
				return runHerd(env, v.name, cs, windowTotal, windowWorkers, func() limiter {
					l := v.lim
					return &l
				}, nil)
			},
		})
	}
}

// herdRows are the rows every herd scenario prints.
func herdRows(name string, total, workers int) []Row {
	return []Row{
		{Key: "time", Label: fmt.Sprintf("%s: wall time, %d GETs from %d goroutines (× ideal)", name, total, workers)},
		{Key: "load", Label: name + ": requests received / 429s sent", Ideal: fmt.Sprintf("%d / 0", total)},
		{Key: "failed", Label: name + ": requests failed (error or non-200)", Ideal: "0"},
	}
}

// idealCell is the client name under which a scenario's Figures carry an
// ideal worked out during the run; table.go prints it in the ideal column.
const idealCell = "ideal"

// admitter is a rate-limited server's decision for one request at now: it
// sets the response's headers and says whether to serve it (200) or
// refuse it (429). Calls are serialised by the server.
type admitter interface {
	admit(now time.Time, h http.Header) bool
}

// limiter is an admitter that knows its ideal.
type limiter interface {
	admitter
	// ideal is the least wall time in which total requests starting at
	// start can all be served, and a note on how it was worked out.
	ideal(start time.Time, total int) (time.Duration, string)
}

// herdRun is what one client's run gave.
type herdRun struct {
	begun             time.Time // when the first request was sent
	wall              time.Duration
	ideal             time.Duration
	received, refused int64
	ok, failed        int            // requests that ended in a 200, and the rest
	why               map[string]int // failures by kind
}

// runHerd measures every client against its own server with a fresh
// limiter: workers goroutines send total GETs through one client. The
// clients run one after another, so that one client's herd does not slow
// another's, and each starts at the same point of a wall-clock second: the
// point the first one starts at, as arbitrary as the moment the bench was
// started. wrap, if set, may change a client before it is made (its
// configuration for this API).
func runHerd(env *Env, name string, cs []Client, total, workers int, newLimiter func() limiter, wrap func(Client) Client) Figures {
	out := Figures{}
	first := time.Now().Add(100 * time.Millisecond)
	phase := first.Sub(first.Truncate(time.Second))
	if phase > herdLatestPhase {
		// An aligned window's first would last less than a herd's few
		// round trips on a busy machine: the ideal would count on a
		// window no client can reach, and every client would lose a
		// second to it.
		phase -= time.Second / 2
		first = first.Add(-time.Second / 2)
	}
	ideal, note := newLimiter().ideal(first, total)
	for _, c := range cs {
		if wrap != nil {
			c = wrap(c)
		}
		start := time.Now().Add(100 * time.Millisecond) // time to start its server
		if at := start.Truncate(time.Second).Add(phase); at.Before(start) {
			start = at.Add(time.Second)
		} else {
			start = at
		}
		d := c.New(nil)
		r := herdOnce(d, newLimiter(), start, total, workers)
		d.Close()
		fmt.Fprintf(env.Log, "bench: %s %s: %s, %d received, %d refused, %d failed %v\n",
			name, c.Name, dur(r.wall), r.received, r.refused, r.failed, r.why)
		out.set("time", c.Name, timeCell(r))
		out.set("load", c.Name, fmt.Sprintf("%d / %d", r.received, r.refused))
		out.set("failed", c.Name, failedCell(r))
	}
	out.set("time", idealCell, fmt.Sprintf("%s (%s)", dur(ideal), note))
	return out
}

// timeCell is a run's wall time, its ratio to the ideal, and how many
// requests failed.
func timeCell(r herdRun) string {
	cell := fmt.Sprintf("%s (%.2f×", dur(r.wall), float64(r.wall)/float64(max(r.ideal, time.Millisecond)))
	if r.failed > 0 {
		cell += fmt.Sprintf("; %d failed", r.failed)
	}
	return cell + ")"
}

// herdOnce runs one client against a fresh limitedServer of lim.
func herdOnce(d Doer, lim limiter, start time.Time, total, workers int) herdRun {
	s, _, refused := limitedServer(lim, 0)
	defer s.Close()
	run := herdSend(d, s.URL+"/v1/items", start, herdCap, total, workers)
	run.ideal, _ = lim.ideal(run.begun, total)
	run.received = int64(len(s.got()))
	run.refused = refused.Load()
	return run
}

// herdSend is the herd itself: it waits for start, then workers goroutines
// take GETs of url from a shared count until total have been sent or limit
// has passed since start; every request's context ends then too. It fills
// in what the client saw: when it began, the wall time to the last answer,
// the requests that ended in a 200 and the failures.
func herdSend(d Doer, url string, start time.Time, limit time.Duration, total, workers int) herdRun {
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(limit))
	defer cancel()
	time.Sleep(time.Until(start))
	run := herdRun{begun: time.Now(), why: map[string]int{}}
	var next atomic.Int64
	var wg sync.WaitGroup
	var rmu sync.Mutex
	last := run.begun
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(total) {
				kind := ""
				if ctx.Err() != nil {
					kind = "not sent by the cap"
				} else {
					r := d.Do(&Call{Ctx: ctx, Method: http.MethodGet, URL: url})
					switch {
					case r.Err != nil:
						kind = errKind(r.Err)
					case r.Status != http.StatusOK:
						kind = strconv.Itoa(r.Status) + " returned"
					}
				}
				now := time.Now()
				rmu.Lock()
				if kind != "" {
					run.failed++
					run.why[kind]++
				} else {
					run.ok++
				}
				if now.After(last) {
					last = now
				}
				rmu.Unlock()
			}
		}()
	}
	wg.Wait()
	run.wall = last.Sub(run.begun)
	return run
}

// limitedServer is a loopback server whose limiter decides every request:
// 429 when it refuses, else 200 after latency (0: at once, and a request
// whose context ends first is answered then). It counts the requests it
// served and refused.
func limitedServer(lim admitter, latency time.Duration) (s *server, served, refused *atomic.Int64) {
	var mu sync.Mutex
	served, refused = new(atomic.Int64), new(atomic.Int64)
	s = newServer(func(_ int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := lim.admit(time.Now(), w.Header())
		mu.Unlock()
		if !ok {
			refused.Add(1)
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		served.Add(1)
		if latency > 0 {
			t := time.NewTimer(latency)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	return s, served, refused
}

// errKind names an error briefly for the failed cell: its type, and its
// message without URLs.
func errKind(err error) string {
	d := describe(Result{Err: err}, time.Now())
	if strings.HasPrefix(d, "`*heed.DeferredError`") {
		return "`*heed.DeferredError`"
	}
	if !strings.HasPrefix(d, "`*") || !strings.Contains(d, "`: ") {
		return d
	}
	typ, _, _ := strings.Cut(d, ": ")
	return typ + ": " + shorten(urlRE.ReplaceAllString(err.Error(), ""))
}

var urlRE = regexp.MustCompile(`\S*https?://\S*\s*`)

// failedCell is the count of failed requests, with what they ended in.
func failedCell(r herdRun) string {
	if r.failed == 0 {
		return "0"
	}
	s := strconv.Itoa(r.failed) + " ("
	first := true
	for _, k := range slices.Sorted(maps.Keys(r.why)) {
		if !first {
			s += ", "
		}
		first = false
		if len(r.why) == 1 {
			s += k
		} else {
			s += fmt.Sprintf("%d %s", r.why[k], k)
		}
	}
	return s + ")"
}

// onlyClients keeps the clients named, in their order.
func onlyClients(cs []Client, names ...string) []Client {
	var out []Client
	for _, c := range cs {
		for _, n := range names {
			if c.Name == n {
				out = append(out, c)
			}
		}
	}
	return out
}

// fixedWindow admits limit requests per window of a second. A window
// starts with the first request after the last one ended, or, when
// aligned, at each wall-clock second. A refused request gets Retry-After:
// the whole seconds to the window's end, rounded up. With publish, every
// response also carries X-RateLimit-Limit, -Remaining and -Reset (seconds
// to the window's end, rounded up; with unix, which needs aligned, the Unix
// time of the window's end, exact).
type fixedWindow struct {
	limit   int
	publish bool
	aligned bool
	unix    bool
	end     time.Time // the current window's end
	used    int
}

func (f *fixedWindow) admit(now time.Time, h http.Header) bool {
	if !now.Before(f.end) {
		f.end, f.used = now.Add(time.Second), 0
		if f.aligned {
			f.end = time.Unix(now.Unix()+1, 0)
		}
	}
	ok := f.used < f.limit
	if ok {
		f.used++
	}
	toEnd := strconv.FormatInt(ceilSeconds(f.end.Sub(now)), 10)
	if f.publish {
		h.Set("X-RateLimit-Limit", strconv.Itoa(f.limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(f.limit-f.used))
		if f.unix {
			h.Set("X-RateLimit-Reset", strconv.FormatInt(f.end.Unix(), 10))
		} else {
			h.Set("X-RateLimit-Reset", toEnd)
		}
	}
	if !ok {
		h.Set("Retry-After", toEnd)
	}
	return ok
}

// ideal: the first window has its whole limit left (the server is fresh)
// and each further window serves limit more; the last request goes at the
// start of the last window needed. A window that starts with the first
// request after the last ended begins, at the soonest, a second after the
// one before, so the ideal is a whole number of seconds.
//
// An aligned window starts wherever start falls in a wall-clock second, so
// the first window has only the rest of that second. The note then also
// gives the floor for a client that never sends before a time it was told:
// when the server's times are whole seconds from now, rounded up
// (Retry-After, a delta X-RateLimit-Reset), each of them is 1 s, so the
// k-th window's requests cannot go before start + k s, whatever the window
// arithmetic allows.
func (f *fixedWindow) ideal(start time.Time, total int) (time.Duration, string) {
	more := time.Duration((total-1)/f.limit) * time.Second
	if !f.aligned {
		return more, fmt.Sprintf("%d windows of %d", (total+f.limit-1)/f.limit, f.limit)
	}
	rest := time.Unix(start.Unix()+1, 0).Sub(start)
	note := fmt.Sprintf("start %.2f s into a window", (time.Second - rest).Seconds())
	if more == 0 {
		return 0, note
	}
	if !f.unix {
		note += fmt.Sprintf("; %s waiting out each 1 s hint", dur(more))
	}
	return rest + more - time.Second, note
}

// ceilSeconds is d in whole seconds, rounded up, at least 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
