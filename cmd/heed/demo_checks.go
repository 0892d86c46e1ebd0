// The demo's self-checks: whether each scenario behaved as described, from
// what the vendor answered and the decisions heed reported.

package main

import (
	"fmt"
	"strings"
)

// fail records that the current scenario did not behave as expected.
func (d *demo) fail(format string, args ...any) {
	d.issues = append(d.issues, fmt.Sprintf(format, args...))
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

// decisions0 returns heed's decision about the first attempt, if reported.
func (x exchange) decisions0() (decided, bool) {
	sent, _ := splitDecisions(x.decisions)
	dec, ok := sent[1]
	return dec, ok
}
