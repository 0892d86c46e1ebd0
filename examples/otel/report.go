package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// printMetrics writes heed's metrics, one line per data point, and names
// the other metrics (otelhttp's).
func printMetrics(w io.Writer, metrics []metricdata.Metrics) {
	var others []string
	for _, m := range metrics {
		if !strings.HasPrefix(m.Name, "heed.") {
			others = append(others, m.Name)
			continue
		}
		var lines []string
		kind := ""
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			kind = "up-down counter"
			if d.IsMonotonic {
				kind = "counter"
			}
			for _, dp := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("  %s  %d", encode(dp.Attributes), dp.Value))
			}
		case metricdata.Histogram[float64]:
			kind = "histogram"
			for _, dp := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("  %s  count=%d sum=%.3f", encode(dp.Attributes), dp.Count, dp.Sum))
			}
		default:
			kind = fmt.Sprintf("%T", m.Data)
		}
		slices.Sort(lines)
		fmt.Fprintf(w, "%s (%s, %s)\n", m.Name, kind, m.Unit)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		fmt.Fprintf(w, "also recorded, by otelhttp: %s\n", strings.Join(others, ", "))
	}
}

// printSpans writes each trace as a tree: the caller's span, then in time
// order its child spans (one per attempt) and its events (heed's), with
// their offsets from the caller's start.
func printSpans(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	byID := map[trace.SpanID]bool{}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && byID[p.SpanID()] {
			children[p.SpanID()] = append(children[p.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	slices.SortFunc(roots, byStart)
	for _, root := range roots {
		fmt.Fprintf(w, "%s  %s%s\n", root.Name(), span(root), attrs(" ", root.Attributes()))
		type line struct {
			at   time.Time
			text string
		}
		var lines []line
		for _, c := range children[root.SpanContext().SpanID()] {
			lines = append(lines, line{c.StartTime(), fmt.Sprintf("%s  %s, %s%s", c.Name(), c.SpanKind(), span(c), attrs(" ", pick(c.Attributes(), "http.response.status_code")))})
		}
		for _, e := range root.Events() {
			lines = append(lines, line{e.Time, "event " + e.Name + attrs(" ", e.Attributes)})
		}
		slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
		for i, l := range lines {
			branch := "├─"
			if i == len(lines)-1 {
				branch = "└─"
			}
			fmt.Fprintf(w, "  %s +%-7s %s\n", branch, ms(l.at.Sub(root.StartTime())), l.text)
		}
	}
}

// span says how long s took and its status, when set.
func span(s sdktrace.ReadOnlySpan) string {
	out := ms(s.EndTime().Sub(s.StartTime()))
	if s.Status().Code != 0 {
		out += ", status " + s.Status().Code.String()
	}
	return out
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// pick returns the attributes of kv named keys.
func pick(kv []attribute.KeyValue, keys ...attribute.Key) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, a := range kv {
		if slices.Contains(keys, a.Key) {
			out = append(out, a)
		}
	}
	return out
}

func attrs(sep string, kv []attribute.KeyValue) string {
	if len(kv) == 0 {
		return ""
	}
	return sep + "{" + encode(attribute.NewSet(kv...)) + "}"
}

func encode(s attribute.Set) string {
	var parts []string
	for _, a := range s.ToSlice() {
		parts = append(parts, string(a.Key)+"="+a.Value.String())
	}
	return strings.Join(parts, " ")
}
