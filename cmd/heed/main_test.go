package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// demo must shut its fake vendor and connections down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantStdout string
		wantStderr string
	}{
		{"no command", nil, "", "Commands:"},
		{"help", []string{"help"}, "demo", ""},
		{"-h", []string{"-h"}, "Commands:", ""},
		{"unknown", []string{"frobnicate"}, "", `unknown command "frobnicate"`},
		{"demo with arguments", []string{"demo", "extra"}, "", "unexpected arguments: extra"},
		{"demo -h", []string{"demo", "-h"}, "", "usage: heed demo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			want := 2
			if tc.name == "help" || tc.name == "-h" || tc.name == "demo -h" {
				want = 0 // asked for, help is no error
			}
			if code := run(tc.args, &stdout, &stderr); code != want {
				t.Errorf("run(%q) = %d, want %d", tc.args, code, want)
			}
			if tc.wantStdout != "" && !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantStdout, stdout.String())
			}
			if tc.wantStderr != "" && !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, stderr.String())
			}
		})
	}
}
