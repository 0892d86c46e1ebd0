// The demo's printing: a line per request the vendor received, with the
// decision heed made about it, in words.

package main

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

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

// result prints what the caller got.
func (d *demo) result(x exchange) {
	n := len(x.arrivals)
	if x.err != nil {
		fmt.Fprintf(d.out, "  caller got: error after %s (%d request(s) sent): %v\n", dur(x.took), n, x.err)
		return
	}
	fmt.Fprintf(d.out, "  caller got: %s after %s (%d request(s) sent)\n", x.resp.Status, dur(x.took), n)
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
