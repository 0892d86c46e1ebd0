package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

// scenario is one situation the demo plays.
type scenario struct {
	title  string   // what it shows, in a few words
	setup  []string // what the fake vendor does, and what to watch
	play   func(d *demo)
	lesson []string // "what this shows"
}

func (d *demo) scenarios() []scenario {
	return []scenario{
		{
			title: "backoff when the server gives no hint",
			setup: []string{
				"GET " + pathModels + " answers 429 three times without saying how long to wait, then 200.",
				"heed backs off with its policy's Backoff (EqualJitter(200ms, 2s) here: ~100-200ms, 200-400ms, 400-800ms).",
			},
			play: (*demo).playBackoff,
			lesson: []string{
				"with no hint heed backs off exponentially, with jitter, and the caller only sees",
				"the final 200: the three 429s never reach it.",
			},
		},
		{
			title: "Retry-After in seconds is honoured",
			setup: []string{
				"GET " + pathFiles + " answers 429 with \"Retry-After: 2\", then 200.",
				"Watch the time of the second arrival: at least 2s after the first.",
			},
			play: (*demo).playRetryAfter,
			lesson: []string{
				"heed waits exactly as long as the server asked, never less (a hint replaces the",
				"backoff), and the caller gets the 200.",
			},
		},
		{
			title: "Retry-After as an HTTP-date",
			setup: []string{
				"GET " + pathStatus + " answers 503 with \"Retry-After: <IMF-fixdate>\", the first whole second",
				"at least 2s ahead (HTTP-dates have 1s resolution), then 200.",
			},
			play: (*demo).playHTTPDate,
			lesson: []string{
				"a date hint is a \"not before\" time: heed does not send again until it has passed.",
				"503 is throttling too, like 429.",
			},
		},
		{
			title: "a wait that does not fit the deadline is deferred, at once",
			setup: []string{
				"GET " + pathBatch + " answers 429 with \"Retry-After: 120\"; the caller's context has a",
				"10s deadline. (Its route \"GET /v1/batches/\" has MaxWait 5m, so only the deadline decides.)",
			},
			play: (*demo).playDeferred,
			lesson: []string{
				"heed neither sleeps into the deadline nor shortens the wait: it returns a",
				"*heed.DeferredError at once. Persist its RetryAt with the job and try again then.",
				"Until then heed's gate keeps every request of that scope from reaching the server.",
			},
		},
		{
			title: "quota exhausted is terminal, not a rate limit",
			setup: []string{
				"POST " + pathChat + " answers OpenAI's 429 with type \"insufficient_quota\":",
				"the account is out of credit, and no amount of waiting fixes that.",
			},
			play: (*demo).playQuota,
			lesson: []string{
				"heed reads the body, sees billing/quota, and delivers the 429 after one request",
				"(body intact) instead of burning retries on it.",
			},
		},
		{
			title: "a lost POST without an idempotency key is not resent",
			setup: []string{
				"POST " + pathCharges + " (no Idempotency-Key): the vendor reads the body, applies the charge,",
				"and drops the connection without answering. Did the charge happen? The client cannot know.",
			},
			play: (*demo).playLostPOST,
			lesson: []string{
				"a failure that may have taken effect is resent only when the request is replay-safe.",
				"A POST without a key is not: resending could charge twice, so the caller gets the error.",
			},
		},
		{
			title: "the same POST with an Idempotency-Key is resent",
			setup: []string{
				"POST " + pathCharges + " with \"Idempotency-Key: " + idemKey + "\": the first response is lost the same way;",
				"the vendor dedupes by key, so the second arrival gets the charge it already made.",
			},
			play: (*demo).playKeyedPOST,
			lesson: []string{
				"a key makes a request replay-safe: heed resends it and the server applies it once.",
				"(Policy.KeyHeader makes heed add such a key to every POST and PATCH itself.)",
			},
		},
	}
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

// fail records that the current scenario did not behave as expected.
func (d *demo) fail(format string, args ...any) {
	d.issues = append(d.issues, fmt.Sprintf(format, args...))
}

// show prints one line per arrival of x, with the decision heed made
// about it, then any decision about a request that was never sent.
func (d *demo) show(x exchange) {
	sent, unsent := splitDecisions(x.decisions)
	for i, a := range x.arrivals {
		status := "dropped"
		if a.Status != 0 {
			status = fmt.Sprint(a.Status)
		}
		what := "(no decision reported)"
		if dec, ok := sent[i+1]; ok {
			what = describe(dec, a)
		}
		fmt.Fprintf(d.out, "  %-8s %-4s %-21s %-7s  %s\n", offset(a.At.Sub(d.start)), a.Method, a.Path, status, what)
	}
	for attempt := range sent {
		if attempt < 1 || attempt > len(x.arrivals) {
			d.fail("heed reported a decision about attempt %d, but the vendor received %d requests", attempt, len(x.arrivals))
		}
	}
	for _, dec := range unsent {
		at := offset(dec.At.Sub(d.start))
		fmt.Fprintf(d.out, "  %-8s %-4s %-21s %-7s  %s\n", at, dec.Method, urlPath(dec.URL), "-", describe(dec, arrival{Method: dec.Method}))
	}
}

// splitDecisions returns the decisions about attempts that were sent, by
// attempt number, and those made at the gate before sending.
func splitDecisions(all []decided) (sent map[int]decided, unsent []decided) {
	sent = make(map[int]decided)
	for _, dec := range all {
		switch {
		case dec.Source == "gate" || dec.Op == "gate wait" || dec.Op == "gate error":
			unsent = append(unsent, dec)
		default:
			sent[dec.Attempt] = dec
		}
	}
	return sent, unsent
}

// describe says in words what heed decided about arrival a.
func describe(dec decided, a arrival) string {
	why := dec.Class
	if dec.Reason != "" && dec.Reason != dec.Class {
		why += ": " + dec.Reason
	}
	switch dec.Op {
	case "retry":
		switch {
		case dec.Class == "ambiguous" && a.Key != "":
			return fmt.Sprintf("resent: carries Idempotency-Key (%s; back off %s)", why, dur(dec.Wait))
		case dec.Source == "backoff":
			return fmt.Sprintf("%s, no hint → back off %s", why, dur(dec.Wait))
		default:
			return fmt.Sprintf("%s → wait %s (%s)", why, dur(dec.Wait), dec.Source)
		}
	case "delivered":
		if dec.Class == "terminal" {
			return fmt.Sprintf("terminal: %s → delivered at once, never retried", dec.Reason)
		}
		return "delivered"
	case "give up":
		stop := dec.Stop
		if stop == "not replay-safe" && a.Key == "" && a.Method == http.MethodPost {
			return fmt.Sprintf("not resent: POST without key is not replay-safe (%s)", why)
		}
		return fmt.Sprintf("not resent: %s (%s)", stop, why)
	case "budget":
		return fmt.Sprintf("not resent: the scope's retry budget is spent (%s)", why)
	case "deferred":
		s := fmt.Sprintf("deferred: retry at %s (wait %s does not fit the %s left; %s)",
			dec.RetryAt.Format("15:04:05"), dur(dec.Wait), dur(dec.Left), why)
		if dec.Source == "gate" {
			s = "not sent: " + s
		}
		return s
	case "gate wait":
		return fmt.Sprintf("gate: scope cooling down → wait %s before sending", dur(dec.Wait))
	}
	return fmt.Sprintf("%s (%s)", dec.Op, why)
}

// expectStatuses checks the statuses the vendor answered (0: dropped).
func (d *demo) expectStatuses(x exchange, want ...int) {
	got := make([]int, len(x.arrivals))
	for i, a := range x.arrivals {
		got[i] = a.Status
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		d.fail("the vendor received %d requests answered %v; expected %d answered %v", len(got), got, len(want), want)
	}
}

// expectOps checks heed's decisions about the attempts sent, in order.
func (d *demo) expectOps(x exchange, want ...string) {
	sent, _ := splitDecisions(x.decisions)
	got := make([]string, 0, len(sent))
	for i := 1; i <= len(sent); i++ {
		got = append(got, sent[i].Op)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		d.fail("heed decided %q; expected %q", got, want)
	}
}

// expectStatus checks that the caller got a response with status want.
func (d *demo) expectStatus(x exchange, want int) {
	switch {
	case x.err != nil:
		d.fail("the caller got an error instead of %d: %v", want, x.err)
	case x.resp.StatusCode != want:
		d.fail("the caller got %s instead of %d", x.resp.Status, want)
	}
}

// result prints what the caller got.
func (d *demo) result(x exchange) {
	n := len(x.arrivals)
	if x.err != nil {
		fmt.Fprintf(d.out, "  caller got: error after %s (%d request(s) sent): %v\n", dur(x.took), n, x.err)
		return
	}
	fmt.Fprintf(d.out, "  caller got: %s after %s (%d request(s) sent)\n", x.resp.Status, dur(x.took), n)
}

func (d *demo) playBackoff() {
	x := d.call(context.Background(), http.MethodGet, pathModels, "", nil)
	d.show(x)
	d.result(x)
	d.expectStatuses(x, 429, 429, 429, 200)
	d.expectOps(x, "retry", "retry", "retry", "delivered")
	d.expectStatus(x, 200)
	sent, _ := splitDecisions(x.decisions)
	for i := 0; i+1 < len(x.arrivals); i++ {
		if dec, ok := sent[i+1]; ok {
			if gap := x.arrivals[i+1].At.Sub(x.arrivals[i].At); gap < dec.Wait {
				d.fail("request %d arrived %s after request %d, before heed's wait of %s", i+2, dur(gap), i+1, dur(dec.Wait))
			}
		}
	}
}

func (d *demo) playRetryAfter() {
	x := d.call(context.Background(), http.MethodGet, pathFiles, "", nil)
	d.show(x)
	d.result(x)
	d.expectStatuses(x, 429, 200)
	d.expectOps(x, "retry", "delivered")
	d.expectStatus(x, 200)
	if len(x.arrivals) >= 2 {
		gap := x.arrivals[1].At.Sub(x.arrivals[0].At)
		fmt.Fprintf(d.out, "  the second request arrived %s after the first\n", dur(gap))
		if gap < 2*time.Second {
			d.fail("the second request arrived %s after the first, before the 2s the server asked for", dur(gap))
		}
	}
	if dec, ok := x.decisions0(); ok && (dec.Source != "Retry-After" || dec.Wait < 2*time.Second) {
		d.fail("heed waited %s from %q; expected at least 2s from Retry-After", dur(dec.Wait), dec.Source)
	}
}

func (d *demo) playHTTPDate() {
	x := d.call(context.Background(), http.MethodGet, pathStatus, "", nil)
	d.show(x)
	d.result(x)
	d.expectStatuses(x, 503, 200)
	d.expectOps(x, "retry", "delivered")
	d.expectStatus(x, 200)
	if len(x.arrivals) >= 1 {
		first := x.arrivals[0]
		date, err := http.ParseTime(first.RetryAfter)
		if err != nil {
			d.fail("the fake vendor sent a bad date %q: %v", first.RetryAfter, err)
			return
		}
		fmt.Fprintf(d.out, "  the server said \"Retry-After: %s\", %s after the 503\n", first.RetryAfter, dur(date.Sub(first.At.Round(0))))
		if len(x.arrivals) >= 2 {
			next := x.arrivals[1].At.Round(0) // wall clock, as the date is
			rel := dur(next.Sub(date)) + " after"
			if next.Before(date) {
				rel = dur(date.Sub(next)) + " before"
			}
			fmt.Fprintf(d.out, "  the retry arrived at %s UTC, %s that date\n", next.UTC().Format("15:04:05.000"), rel)
			if next.Before(date) {
				d.fail("the retry arrived at %s, %s before the date the server gave", next.UTC().Format("15:04:05.000"), dur(date.Sub(next)))
			}
		}
	}
	if dec, ok := x.decisions0(); ok && dec.Source != "Retry-After" {
		d.fail("heed took its wait from %q, not from the Retry-After date", dec.Source)
	}
}

func (d *demo) playDeferred() {
	ctx, cancel := context.WithTimeout(context.Background(), callerDeadline)
	defer cancel()
	x := d.call(ctx, http.MethodGet, pathBatch, "", nil)
	d.show(x)
	d.expectStatuses(x, 429)
	d.expectOps(x, "deferred")
	var ue *url.Error
	var de *heed.DeferredError
	switch {
	case x.err == nil:
		d.fail("the caller got %s, not a *heed.DeferredError", x.resp.Status)
		return
	case !errors.As(x.err, &ue):
		d.fail("the error is a %T, not the *url.Error that http.Client returns", x.err)
	}
	if !errors.As(x.err, &de) {
		d.fail("errors.As found no *heed.DeferredError in %v", x.err)
		return
	}
	fmt.Fprintf(d.out, "  caller got, after %s: %v\n", dur(x.took), x.err)
	fmt.Fprintf(d.out, "  errors.As(err, &de) finds the *heed.DeferredError inside the *url.Error:\n")
	fmt.Fprintf(d.out, "      de.RetryAt = %s   (persist this: the work is eligible again then)\n", de.RetryAt.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(d.out, "      de.Wait    = %s   (the full wait the server asked for)\n", dur(de.Wait))
	fmt.Fprintf(d.out, "      de.Left    = %s   (what remained of the 10s deadline)\n", de.Left.Round(time.Microsecond))
	fmt.Fprintf(d.out, "      de.Attempts = %d, de.Status = %d, de.Reason = %q, errors.Is(err, heed.ErrDeferred) = %t\n",
		de.Attempts, de.Status, de.Reason, errors.Is(x.err, heed.ErrDeferred))
	if x.took > deferLimit {
		d.fail("the deferral took %s; it must return at once (under %s)", dur(x.took), deferLimit)
	}
	if !errors.Is(x.err, heed.ErrDeferred) {
		d.fail("errors.Is(err, heed.ErrDeferred) is false")
	}
	if de.Wait < 120*time.Second {
		d.fail("de.Wait is %s, shorter than the 120s the server asked for", dur(de.Wait))
	}
	if in := time.Until(de.RetryAt); in < 119*time.Second || in > 121*time.Second {
		d.fail("de.RetryAt is %s from now; expected about 120s", dur(in))
	}
	if de.Left <= 0 || de.Left > callerDeadline {
		d.fail("de.Left is %s; expected what remained of the %s deadline", dur(de.Left), callerDeadline)
	}
	if de.Attempts != 1 || de.Status != http.StatusTooManyRequests {
		d.fail("de.Attempts = %d, de.Status = %d; expected 1 and 429", de.Attempts, de.Status)
	}

	// A second request of the same scope, while it cools down.
	ctx2, cancel2 := context.WithTimeout(context.Background(), callerDeadline)
	defer cancel2()
	fmt.Fprintln(d.out, "  A second GET of the same scope, right after:")
	y := d.call(ctx2, http.MethodGet, pathBatch, "", nil)
	d.show(y)
	if len(y.arrivals) != 0 {
		d.fail("the second request reached the server (%d arrivals) while its scope was cooling down", len(y.arrivals))
	}
	var de2 *heed.DeferredError
	switch {
	case y.err == nil:
		d.fail("the second request got %s, not a *heed.DeferredError", y.resp.Status)
	case !errors.As(y.err, &de2):
		d.fail("the second request got %v, not a *heed.DeferredError", y.err)
	default:
		fmt.Fprintf(d.out, "  caller got, after %s, without sending: %v\n", dur(y.took), y.err)
		if de2.Attempts != 0 {
			d.fail("the gate's DeferredError says %d attempts; expected 0", de2.Attempts)
		}
		if y.took > deferLimit {
			d.fail("the gate's deferral took %s; it must return at once", dur(y.took))
		}
	}
}

func (d *demo) playQuota() {
	x := d.call(context.Background(), http.MethodPost, pathChat, `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`, nil)
	d.show(x)
	d.result(x)
	d.expectStatuses(x, 429)
	d.expectOps(x, "delivered")
	d.expectStatus(x, http.StatusTooManyRequests)
	if x.err == nil {
		fmt.Fprintf(d.out, "  its body, intact: %s\n", x.body)
		if x.body != quotaBody {
			d.fail("the body the caller got is not the one the server sent")
		}
	}
	if dec, ok := x.decisions0(); ok && dec.Class != "terminal" {
		d.fail("heed classed the quota 429 %q, not terminal", dec.Class)
	}
}

func (d *demo) playLostPOST() {
	// A fresh connection: net/http itself resends a request it deems
	// replay-safe when a reused connection fails, and the demo is about
	// heed's decision, not that one.
	d.client.CloseIdleConnections()
	x := d.call(context.Background(), http.MethodPost, pathCharges, `{"amount":4200,"currency":"usd"}`, nil)
	d.show(x)
	d.result(x)
	d.expectStatuses(x, 0)
	d.expectOps(x, "give up")
	if dec, ok := x.decisions0(); ok && dec.Op == "give up" && dec.Stop != "not replay-safe" {
		d.fail("heed gave up because %q; expected because the POST is not replay-safe", dec.Stop)
	}
	all, n := d.vendor.chargesWithKey("")
	fmt.Fprintf(d.out, "  vendor: %d charge(s) applied without a key, %d in all; the caller must check before trying again\n", n, len(all))
	if x.err == nil {
		d.fail("the caller got %s; expected the connection error", x.resp.Status)
	} else if errors.Is(x.err, heed.ErrDeferred) {
		d.fail("the caller got a deferral; expected the connection error: %v", x.err)
	}
	if n != 1 {
		d.fail("the vendor applied %d charges without a key; expected 1", n)
	}
}

func (d *demo) playKeyedPOST() {
	d.client.CloseIdleConnections() // see playLostPOST
	x := d.call(context.Background(), http.MethodPost, pathCharges, `{"amount":4200,"currency":"usd"}`, http.Header{"Idempotency-Key": {idemKey}})
	d.show(x)
	d.result(x)
	d.expectStatuses(x, 0, 200)
	d.expectOps(x, "retry", "delivered")
	d.expectStatus(x, 200)
	_, n := d.vendor.chargesWithKey(idemKey)
	if x.err == nil {
		fmt.Fprintf(d.out, "  its body: %s (Idempotent-Replayed: %s)\n", x.body, x.resp.Header.Get("Idempotent-Replayed"))
	}
	fmt.Fprintf(d.out, "  vendor: applied once: %d charge with key %s, though it arrived %d times\n", n, idemKey, len(x.arrivals))
	for _, a := range x.arrivals {
		if a.Key != idemKey {
			d.fail("an attempt arrived with Idempotency-Key %q, not %q", a.Key, idemKey)
		}
	}
	if n != 1 {
		d.fail("the vendor applied %d charges with key %s; expected 1", n, idemKey)
	}
}

// decisions0 returns heed's decision about the first attempt, if reported.
func (x exchange) decisions0() (decided, bool) {
	sent, _ := splitDecisions(x.decisions)
	dec, ok := sent[1]
	return dec, ok
}

// offset formats a time since the start of the demo, as "+2.004s".
func offset(d time.Duration) string {
	return fmt.Sprintf("+%.3fs", d.Seconds())
}

// dur formats a duration to the millisecond, or to the microsecond when
// shorter than a millisecond.
func dur(d time.Duration) string {
	if d > -time.Millisecond && d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// urlPath returns the path of a reported URL.
func urlPath(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Path
	}
	return s
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
