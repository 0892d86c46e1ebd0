package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if kind := os.Getenv(childEnv); kind != "" {
		os.Exit(runChild(kind))
	}
	os.Exit(m.Run())
}

// table is a parsed markdown table: header, and rows keyed by their first
// cell.
type table struct {
	head []string
	rows map[string][]string
}

func parseTable(t *testing.T, out string) table {
	t.Helper()
	var tb table
	tb.rows = map[string][]string{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.GreaterOrEqual(t, len(lines), 3, "a header, a rule and rows:\n%s", out)
	for i, l := range lines {
		require.True(t, strings.HasPrefix(l, "| ") && strings.HasSuffix(l, " |"), "line %d is not a table row: %q", i+1, l)
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |"), " | ")
		switch i {
		case 0:
			tb.head = cells
		case 1:
			for _, c := range cells {
				require.Equal(t, "---", c)
			}
			require.Len(t, cells, len(tb.head))
		default:
			require.Len(t, cells, len(tb.head), "row %q", l)
			tb.rows[cells[0]] = cells
		}
	}
	return tb
}

// cell returns the cell of the row labelled label in column col.
func (tb table) cell(t *testing.T, label, col string) string {
	t.Helper()
	row, ok := tb.rows[label]
	require.True(t, ok, "no row %q", label)
	for i, h := range tb.head {
		if h == col {
			return row[i]
		}
	}
	t.Fatalf("no column %q", col)
	return ""
}

// millis parses a duration cell such as "3.2 ms", "45 ms" or "1.01 s".
func millis(t *testing.T, s string) float64 {
	t.Helper()
	v, unit, ok := strings.Cut(s, " ")
	require.True(t, ok, "not a duration: %q", s)
	f, err := strconv.ParseFloat(v, 64)
	require.NoError(t, err)
	switch unit {
	case "ms":
		return f
	case "s":
		return f * 1000
	}
	t.Fatalf("unit %q in %q", unit, s)
	return 0
}

func TestQuickTableShowsHeedsFigures(t *testing.T) {
	var out, errs bytes.Buffer
	start := time.Now()
	code := run([]string{"-quick", "-scenarios", "deadline,terminal-quota,lost-response"}, &out, &errs)
	require.Zero(t, code, errs.String())
	assert.Less(t, time.Since(start), 20*time.Second)
	tb := parseTable(t, out.String())
	assert.Equal(t, []string{"figure", "ideal", "bare net/http", "go-retryablehttp", "failsafe-go", "resty v2", "heed"}, tb.head)
	assert.Len(t, tb.rows, 7)

	assert.Less(t, millis(t, tb.cell(t, "deadline: time until the call returns", "heed")), 50.0, "heed defers at once")
	assert.Contains(t, tb.cell(t, "deadline: error returned", "heed"), "*heed.DeferredError")
	assert.Contains(t, tb.cell(t, "deadline: error returned", "heed"), "RetryAt +120 s")
	assert.Equal(t, "1", tb.cell(t, "deadline: requests sent", "heed"))
	assert.Equal(t, "1", tb.cell(t, "terminal-quota: requests sent", "heed"))
	assert.Less(t, millis(t, tb.cell(t, "terminal-quota: time spent", "heed")), 50.0)
	assert.Equal(t, "1 (then error)", tb.cell(t, "lost-response: times applied, no key", "heed"))
	assert.Equal(t, "1 (then 200)", tb.cell(t, "lost-response: times applied, with Idempotency-Key", "heed"))

	// The peers wait into the deadline: the comparison is real.
	assert.GreaterOrEqual(t, millis(t, tb.cell(t, "deadline: time until the call returns", "go-retryablehttp")), 1900.0)
}

func TestFlagsChooseColumnsAndRejectUnknownNames(t *testing.T) {
	var out, errs bytes.Buffer
	require.Zero(t, run([]string{"-scenarios", "terminal-quota", "-clients", "heed,bare"}, &out, &errs), errs.String())
	tb := parseTable(t, out.String())
	assert.Equal(t, []string{"figure", "ideal", "bare net/http", "heed"}, tb.head, "table order, whatever the flag's")

	out.Reset()
	assert.Equal(t, 2, run([]string{"-scenarios", "nope"}, &out, &errs))
	assert.Equal(t, 2, run([]string{"-clients", "nope"}, &out, &errs))
	assert.Empty(t, out.String())
}

func TestAdapterColumnDecidesAsHeed(t *testing.T) {
	var out, errs bytes.Buffer
	require.Zero(t, run([]string{"-scenarios", "deadline,terminal-quota,lost-response", "-clients", "heed-retryable"}, &out, &errs), errs.String())
	tb := parseTable(t, out.String())
	col := "go-retryablehttp + heed/retryable"
	assert.Less(t, millis(t, tb.cell(t, "deadline: time until the call returns", col)), 50.0)
	assert.Contains(t, tb.cell(t, "deadline: error returned", col), "*heed.DeferredError")
	assert.Equal(t, "1", tb.cell(t, "terminal-quota: requests sent", col))
	assert.Equal(t, "1 (then error)", tb.cell(t, "lost-response: times applied, no key", col))
	assert.Equal(t, "1 (then 200)", tb.cell(t, "lost-response: times applied, with Idempotency-Key", col))
}
