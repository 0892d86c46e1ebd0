package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// herdFigures is one client's figures of a herd scenario, parsed back from
// the table.
type herdFigures struct {
	wall, ideal, floor float64 // ms; floor: 0 when the server's times are exact
	received, refused  int
	failed             string
}

var floorRE = regexp.MustCompile(`; ([0-9.]+ s) waiting out`)

func herdCell(t *testing.T, tb table, name, col string) herdFigures {
	t.Helper()
	first2 := func(s string) string {
		f := strings.Fields(s)
		require.GreaterOrEqual(t, len(f), 2, "%q", s)
		return f[0] + " " + f[1]
	}
	var h herdFigures
	var timeLabel string
	for label := range tb.rows {
		if strings.HasPrefix(label, name+": wall time, ") {
			timeLabel = label
		}
	}
	require.NotEmpty(t, timeLabel, "no time row for %s", name)
	h.wall = millis(t, first2(tb.cell(t, timeLabel, col)))
	ideal := tb.cell(t, timeLabel, "ideal")
	h.ideal = millis(t, first2(ideal))
	if m := floorRE.FindStringSubmatch(ideal); m != nil {
		h.floor = millis(t, m[1])
	}
	rec, ref, ok := strings.Cut(tb.cell(t, name+": requests received / 429s sent", col), " / ")
	require.True(t, ok)
	var err error
	h.received, err = strconv.Atoi(rec)
	require.NoError(t, err)
	h.refused, err = strconv.Atoi(ref)
	require.NoError(t, err)
	h.failed = tb.cell(t, name+": requests failed (error or non-200)", col)
	return h
}

// TestHerdHeedMeetsTheIssueCriteria runs the herd scenarios
// for heed, with go-retryablehttp beside it for the 429 comparison (each
// client has its own server; about 35 s in all, go-retryablehttp on the
// token bucket the longest).
//
// heed's bar is to finish herd-window and herd-quota within 1.05× the
// window arithmetic's ideal; their windows start with the first request
// after the last ended, and the test asserts that bound. With windows
// aligned to wall-clock seconds and Retry-After given as whole seconds
// rounded up, every hint is "1 s", so a client that never sends before the
// time it was told cannot start the k-th window's requests before
// start + k s: for herd-window-aligned the test asserts 1.05× the larger of
// the ideal and that floor, and logs the literal ratio; with the exact
// reset GitHub sends (herd-quota-unix) it asserts the literal bound.
//
// Timing on a shared machine is noisy: when a time bound or a comparison
// with go-retryablehttp fails, the run is made once more and the second is
// judged. Under the race detector, which slows every request several
// times, and the two clients' goroutines unevenly, the time bounds and the
// comparisons with go-retryablehttp's 429s are logged, not asserted; heed's
// own counts (no failure, herd-quota's 2 %) are asserted either way. CI
// runs this test without the race detector too.
func TestHerdHeedMeetsTheIssueCriteria(t *testing.T) {
	if testing.Short() {
		t.Skip("herd scenarios take about 10 s")
	}
	names := []string{"herd-window", "herd-quota", "herd-window-aligned", "herd-quota-unix", "herd-bucket"}
	var tb table
	for try := 1; ; try++ {
		var out, errs bytes.Buffer
		require.Zero(t, run([]string{"-scenarios", strings.Join(names, ","), "-clients", "retryablehttp,heed"}, &out, &errs), errs.String())
		t.Logf("run %d:\n%s", try, out.String())
		tb = parseTable(t, out.String())
		slow := false
		for _, n := range names {
			h := herdCell(t, tb, n, "heed")
			slow = slow || h.wall > 1.05*max(h.ideal, h.floor)
			switch p := herdCell(t, tb, n, "go-retryablehttp"); n {
			case "herd-window", "herd-window-aligned":
				slow = slow || h.refused > p.refused
			case "herd-bucket":
				slow = slow || 3*h.refused > p.refused || h.wall > p.wall
			}
		}
		if !slow || raceEnabled || try == 2 {
			break
		}
	}
	within := func(wall, bound float64, msg string) {
		t.Helper()
		if raceEnabled {
			t.Logf("%s: %.0f ms against %.0f ms (not asserted under -race)", msg, wall, bound)
			return
		}
		assert.LessOrEqual(t, wall, bound, msg)
	}
	noMore := func(heed, peer int, msg string) {
		t.Helper()
		if raceEnabled {
			t.Logf("%s: %d against %d (not asserted under -race)", msg, heed, peer)
			return
		}
		assert.LessOrEqual(t, heed, peer, msg)
	}

	w := herdCell(t, tb, "herd-window", "heed")
	rw := herdCell(t, tb, "herd-window", "go-retryablehttp")
	assert.Zero(t, w.floor)
	assert.Equal(t, "0", w.failed)
	within(w.wall, 1.05*w.ideal, "herd-window: within 1.05× the window ideal")
	noMore(w.refused, rw.refused, "herd-window: no more 429s than go-retryablehttp")
	t.Logf("herd-window: heed %.2f× the window ideal, %d 429s against go-retryablehttp's %d", w.wall/w.ideal, w.refused, rw.refused)

	q := herdCell(t, tb, "herd-quota", "heed")
	assert.Zero(t, q.floor)
	assert.Equal(t, "0", q.failed)
	assert.LessOrEqual(t, float64(q.refused), 0.02*float64(q.received-q.refused), "herd-quota: at most 2% as many 429s as requests served")
	within(q.wall, 1.05*q.ideal, "herd-quota: within 1.05× the window ideal")
	t.Logf("herd-quota: heed %.2f× the window ideal, %d 429s", q.wall/q.ideal, q.refused)

	a := herdCell(t, tb, "herd-window-aligned", "heed")
	ra := herdCell(t, tb, "herd-window-aligned", "go-retryablehttp")
	assert.Equal(t, "0", a.failed)
	within(a.wall, 1.05*max(a.ideal, a.floor), "herd-window-aligned: within 1.05× of what whole-second hints allow")
	noMore(a.refused, ra.refused, "herd-window-aligned: no more 429s than go-retryablehttp")
	t.Logf("herd-window-aligned: heed %.2f× the window arithmetic, %.2f× the floor of whole-second hints", a.wall/a.ideal, a.wall/max(a.ideal, a.floor))

	u := herdCell(t, tb, "herd-quota-unix", "heed")
	assert.Zero(t, u.floor)
	assert.Equal(t, "0", u.failed)
	assert.LessOrEqual(t, float64(u.refused), 0.02*float64(u.received-u.refused), "herd-quota-unix: at most 2% as many 429s as requests served")
	within(u.wall, 1.05*u.ideal, "herd-quota-unix: within 1.05× the window ideal")

	b := herdCell(t, tb, "herd-bucket", "heed")
	rb := herdCell(t, tb, "herd-bucket", "go-retryablehttp")
	assert.Equal(t, "0", b.failed, "herd-bucket: no request fails")
	noMore(3*b.refused, rb.refused, "herd-bucket: at most a third of go-retryablehttp's 429s (heed's × 3)")
	within(b.wall, rb.wall, "herd-bucket: in no more wall time than go-retryablehttp")
	t.Logf("herd-bucket: heed %d 429s in %.2f s, go-retryablehttp %d in %.2f s", b.refused, b.wall/1000, rb.refused, rb.wall/1000)
}
