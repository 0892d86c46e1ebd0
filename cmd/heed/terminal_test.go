package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// hostileStatus and hostileBody are what a server may send to take over a
// terminal: a window title (OSC ... BEL, OSC ... ST), a screen clear and a
// cursor move (CSI), a C1 CSI as UTF-8 and as a raw 8-bit byte, BEL, DEL,
// backspace and a carriage return that would overwrite the line.
const (
	hostileStatus = "418 I'm a teapot\x1b]0;PWNED-TITLE\x07\x1b[2J"
	hostileBody   = "plain line one\n" +
		"\x1b[2J\x1b[Hcleared?\n" +
		"\x1b]2;TITLE2\x1b\\ osc with ST\n" +
		"\xc2\x9b31m c1 csi\n" +
		"\x9b32m raw 8-bit csi\n" +
		"\x07bell \x7fdel \x08back\r overwrite\n" +
		"last line, caf\u00e9"
)

// TestNoEscapingOffTerminal asserts what the help text says: off a
// terminal, stderr gets the server's status text and body as sent.
func TestNoEscapingOffTerminal(t *testing.T) {
	bin := buildHeed(t)
	base := newRawServer(t, rawResponse(hostileStatus, hostileBody))
	r := runHeed(t, bin, "get", base+"/v1/x")
	assert.Equal(t, exitHTTP, r.code)
	assert.Contains(t, r.stderr, "heed get: HTTP "+hostileStatus+"\n")
	assert.Contains(t, r.stderr, hostileBody+"\n")
}
