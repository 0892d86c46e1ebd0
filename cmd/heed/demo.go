// The demo: "heed demo" plays rate-limiting scenarios against an in-process
// fake vendor, through a heed Transport whose decisions it observes.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/heed-go/heed"
)

// Settings of the demo.
const (
	// safetyTimeout bounds every request of a scenario that sets no deadline
	// of its own, so that the demo ends even if heed misbehaves.
	safetyTimeout = 15 * time.Second
	// callerDeadline is the context deadline of the deferral scenario.
	callerDeadline = 10 * time.Second
	// deferLimit is how long returning a *heed.DeferredError may take.
	deferLimit = time.Second
	// idemKey is the idempotency key of the resent POST.
	idemKey = "order-1042"
)

// demoBackoff is the backoff of the demo's policies: short, so that the demo
// is quick. heed's default is EqualJitter(1s, 30s).
var demoBackoff = heed.EqualJitter(200*time.Millisecond, 2*time.Second)

// runDemo is "heed demo": it starts the fake vendor, plays the scenarios
// through a heed Transport, prints what the vendor received and what heed
// decided, and checks that each scenario behaved as described. It returns
// 0 when all did, 1 when any did not, 2 on a usage error.
func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: heed demo\n\n"+
			"Plays rate-limiting scenarios against a fake vendor API that runs inside\n"+
			"this process on 127.0.0.1, through an http.Client whose Transport is heed,\n"+
			"and prints every request the vendor received with the decision heed made.\n"+
			"Exits 1 if any scenario does not behave as described.\n")
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "heed demo: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return 2
	}

	d := &demo{out: stdout, start: time.Now(), rec: &decisionLog{}}
	d.vendor = startFakeVendor()
	defer d.vendor.Close()
	d.client = &http.Client{Transport: heed.New(nil,
		heed.WithPolicy(heed.Policy{Name: "demo", Backoff: demoBackoff}),
		heed.WithRoute("GET /v1/batches/", heed.Policy{
			Name:    "batches",
			Scope:   "batches",
			MaxWait: 5 * time.Minute,
			Backoff: demoBackoff,
		}),
		heed.WithObserver(d.rec.observe),
	)}
	defer d.client.CloseIdleConnections()
	return d.run()
}

// demo is the state of one run of the demo.
type demo struct {
	out    io.Writer
	start  time.Time
	vendor *fakeVendor
	client *http.Client
	rec    *decisionLog

	failed []string // one line per scenario that misbehaved
	issues []string // what went wrong in the current scenario
}

// run plays every scenario and returns the exit code.
func (d *demo) run() int {
	d.intro()
	all := d.scenarios()
	for i, s := range all {
		d.issues = nil
		fmt.Fprintf(d.out, "\n[%d/%d] %s\n", i+1, len(all), s.title)
		for _, l := range s.setup {
			fmt.Fprintf(d.out, "      %s\n", l)
		}
		s.play(d)
		fmt.Fprintf(d.out, "  what this shows: %s\n", strings.Join(s.lesson, "\n                   "))
		if len(d.issues) == 0 {
			fmt.Fprintln(d.out, "  ok: behaved as described")
			continue
		}
		for _, p := range d.issues {
			fmt.Fprintf(d.out, "  NOT AS EXPECTED: %s\n", p)
		}
		d.failed = append(d.failed, fmt.Sprintf("[%d] %s: %s", i+1, s.title, strings.Join(d.issues, "; ")))
	}
	took := time.Since(d.start).Round(10 * time.Millisecond)
	if len(d.failed) > 0 {
		fmt.Fprintf(d.out, "\nFAILED: %d of %d scenarios did not behave as expected (%s):\n", len(d.failed), len(all), took)
		for _, f := range d.failed {
			fmt.Fprintf(d.out, "  %s\n", f)
		}
		return 1
	}
	fmt.Fprintf(d.out, "\nAll %d scenarios behaved as described (%s).\n", len(all), took)
	return 0
}

func (d *demo) intro() {
	fmt.Fprintf(d.out, `heed demo: what heed decides, request by request.

A fake vendor API runs inside this process at %s. Every request goes through
http.Client{Transport: heed.New(nil, ...)}. Each line below is one request the vendor
received: time since the demo started, method, path, the status it answered ("dropped":
it closed the connection without answering), and the decision heed made about it.

Policies: "demo" for every path: heed's defaults (at most 5 attempts, at least 1s after
a server hint, at most 60s of waiting in process), except Backoff = EqualJitter(200ms, 2s),
shortened from the default EqualJitter(1s, 30s) so that the demo is quick.
"batches" for GET /v1/batches/: the same, with its own gate scope and MaxWait 5m.
`, d.vendor.URL())
}

// exchange is one call of client.Do, and what the vendor and heed saw.
type exchange struct {
	resp      *http.Response // its body read into body, and closed
	body      string
	err       error
	took      time.Duration
	arrivals  []arrival // requests the vendor received during the call
	decisions []decided // decisions heed reported during the call
}

// call sends one request through the demo's client. ctx nil means a
// context bounded by safetyTimeout.
func (d *demo) call(ctx context.Context, method, path, body string, header http.Header) exchange {
	if _, ok := ctx.Deadline(); !ok {
		c, cancel := context.WithTimeout(ctx, safetyTimeout)
		defer cancel()
		ctx = c
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.vendor.URL()+path, rd)
	if err != nil {
		panic(err) // the demo's own URLs are valid
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	d.rec.take()
	mark := d.vendor.mark()
	start := time.Now()
	var x exchange
	x.resp, x.err = d.client.Do(req)
	x.took = time.Since(start)
	if x.resp != nil {
		b, err := io.ReadAll(x.resp.Body)
		x.resp.Body.Close()
		x.body = string(b)
		if err != nil {
			d.fail("reading the response body: %v", err)
		}
	}
	x.arrivals = d.vendor.since(mark)
	x.decisions = d.rec.take()
	return x
}

// decided is one decision heed made, from its heed.Event.
type decided struct {
	At      time.Time // when it was reported
	Op      string    // the decision, as heed logs it: heed.EventKind.String()
	Route   string
	Method  string
	URL     string
	Attempt int
	Status  int
	Class   string
	Reason  string
	Wait    time.Duration
	Source  string // where the wait came from: a header, "backoff", "gate", ...
	Stop    string // why a retryable failure was delivered ("give up")
	RetryAt time.Time
	Left    time.Duration
	Err     error
}

// decisionLog collects the decisions heed reports. Safe for concurrent use.
type decisionLog struct {
	mu   sync.Mutex
	list []decided
}

// take returns the decisions reported since the last take, and forgets
// them.
func (l *decisionLog) take() []decided {
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.list
	l.list = nil
	return list
}

// observe is the demo Transport's heed.WithObserver: it records every
// decision, so that the demo shows heed's actual decisions.
func (l *decisionLog) observe(e heed.Event) {
	if e.Kind == heed.EventAttempt {
		return // not a decision of its own: the one that follows says what heed made of it
	}
	d := decided{
		At:      time.Now(),
		Op:      e.Kind.String(),
		Route:   e.Route,
		Method:  e.Method,
		URL:     e.URL,
		Attempt: e.Attempt,
		Status:  e.Status,
		Class:   e.Class.String(),
		Reason:  e.Reason,
		Wait:    e.Wait,
		Source:  e.Source,
		Stop:    e.Stop,
		RetryAt: e.RetryAt,
		Left:    e.Left,
		Err:     e.Err,
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, d)
}
