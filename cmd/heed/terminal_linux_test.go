//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileBodyShown is hostileBody as heed shows it on a terminal.
const hostileBodyShown = "plain line one\n" +
	`\x1b[2J\x1b[Hcleared?` + "\n" +
	`\x1b]2;TITLE2\x1b\ osc with ST` + "\n" +
	`\u009b31m c1 csi` + "\n" +
	`\x9b32m raw 8-bit csi` + "\n" +
	`\abell \x7fdel \bback\r overwrite` + "\n" +
	"last line, caf\u00e9"

// assertNoServerControls asserts that what heed wrote on the terminal holds
// no control sequence but its own countdown's line clear.
func assertNoServerControls(t *testing.T, out string) {
	t.Helper()
	own := strings.ReplaceAll(out, clearLine, "")
	for _, raw := range []string{"\x1b", "\x07", "\x08", "\x7f", "\r", "\xc2\x9b", "\x9b"} {
		assert.NotContains(t, own, raw, "a raw control byte reached the terminal")
	}
}

// TestTerminalEscapesServerText runs the built binary with a real
// pseudo-terminal as stderr against servers whose status text and bodies
// hold terminal control sequences: none reaches the terminal raw, the text
// is still shown (escaped), and the live countdown still runs.
func TestTerminalEscapesServerText(t *testing.T) {
	bin := buildHeed(t)

	t.Run("get: a status text and an error body, after a countdown", func(t *testing.T) {
		base := newRawServer(t,
			rawResponse("429 Too Many Requests", "", "Retry-After: 1"),
			rawResponse(hostileStatus, hostileBody, "Content-Type: text/plain"))
		r := runOnTerminal(t, bin, "get", base+"/v1/x")
		assert.Equal(t, exitHTTP, r.code)
		assertNoServerControls(t, r.stderr)
		assert.Contains(t, r.stderr, `heed get: HTTP 418 I'm a teapot\x1b]0;PWNED-TITLE\a\x1b[2J`+"\n")
		assert.Contains(t, r.stderr, hostileBodyShown+"\n")
		assert.Contains(t, r.stderr, "next attempt in ", "the countdown is drawn")
		assert.Contains(t, r.stderr, clearLine, "and cleared")
		assert.Empty(t, r.stdout)
	})

	t.Run("poll: an error body, after a countdown", func(t *testing.T) {
		base := newRawServer(t,
			rawResponse("200 OK", `{"status":"running"}`, "Content-Type: application/json", "Retry-After: 1"),
			rawResponse("404 Not Found", hostileBody))
		r := runOnTerminal(t, bin, "poll", "--terminal", "succeeded", base+"/v1/jobs/7")
		assert.Equal(t, exitHTTP, r.code)
		assertNoServerControls(t, r.stderr)
		assert.Contains(t, r.stderr, hostileBodyShown+"\n")
		assert.Contains(t, r.stderr, "next check in ", "the countdown is drawn")
	})

	t.Run("a body on stdout is never changed", func(t *testing.T) {
		base := newRawServer(t, rawResponse("200 OK", hostileBody))
		r := runOnTerminal(t, bin, "get", base+"/v1/x")
		require.Equal(t, exitOK, r.code)
		assert.Equal(t, hostileBody, r.stdout)
		assertNoServerControls(t, r.stderr)
	})
}
