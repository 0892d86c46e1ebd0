// The demo's scenarios: each situation it plays against the fake vendor,
// what it sends and what it expects of heed.

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heed-go/heed"
)

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
