package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the whole demo in process and checks its exit code and
// the lines that show each scenario's point.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes several seconds")
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := runDemo(nil, &stdout, &stderr)
	took := time.Since(start)
	out := stdout.String()
	t.Logf("demo output (%s):\n%s", took.Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("runDemo = %d, want 0; stderr: %s", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr is not empty: %s", stderr.String())
	}
	if took > 30*time.Second {
		t.Errorf("the demo took %s, want under 30s", took)
	}
	for _, want := range []string{
		"http://127.0.0.1:",
		"EqualJitter(200ms, 2s)",
		"wait 2s (Retry-After)",
		"*heed.DeferredError",
		"retry at",
		"de.RetryAt = ",
		"de.Wait    = 2m0s",
		"not resent: POST without key is not replay-safe",
		"resent: carries Idempotency-Key",
		"applied once",
		"All 7 scenarios behaved as described",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "NOT AS EXPECTED") {
		t.Errorf("a scenario reported a problem")
	}

	sections := scenarioSections(out)
	if len(sections) != 7 {
		t.Fatalf("found %d scenario sections, want 7", len(sections))
	}
	for _, tc := range []struct {
		scenario int
		path     string
		arrivals int
		want     string
	}{
		{1, "/v1/models", 4, "delivered"},
		{2, "/v1/files", 2, "delivered"},
		{3, "/v1/status", 2, "(Retry-After)"},
		{4, "/v1/batches/b_42", 2, "deferred: retry at"}, // the second one never sent
		{5, "/v1/chat/completions", 1, "terminal: "},
		{6, "/v1/charges", 1, "dropped"},
		{7, "/v1/charges", 2, "200      delivered"},
	} {
		s := sections[tc.scenario]
		line := regexp.MustCompile(`(?m)^  \+\d+\.\d{3}s +[A-Z]+ +` + regexp.QuoteMeta(tc.path) + ` `)
		if n := len(line.FindAllString(s, -1)); n != tc.arrivals {
			t.Errorf("scenario %d shows %d requests to %s, want %d:\n%s", tc.scenario, n, tc.path, tc.arrivals, s)
		}
		if !strings.Contains(s, tc.want) {
			t.Errorf("scenario %d lacks %q:\n%s", tc.scenario, tc.want, s)
		}
	}
	if s := sections[4]; !strings.Contains(s, "not sent: deferred") || !strings.Contains(s, "attempts 0") {
		t.Errorf("scenario 4 does not show the gate deferring the second request unsent:\n%s", s)
	}
}

// scenarioSections splits the demo's output into its scenarios, by number.
func scenarioSections(out string) map[int]string {
	head := regexp.MustCompile(`(?m)^\[(\d)/7\] `)
	idx := head.FindAllStringSubmatchIndex(out, -1)
	m := make(map[int]string)
	for i, loc := range idx {
		end := len(out)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		m[int(out[loc[2]]-'0')] = out[loc[0]:end]
	}
	return m
}
