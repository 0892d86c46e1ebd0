// Escaping: what a server sent, shown on a terminal without the control
// characters that could rewrite it.

package main

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// terminalSafe returns the writer for what "heed get" and "heed poll" say
// on stderr: their own lines and what a server sent (a status text, an
// error body, an error that quotes them). On a terminal, it escapes
// control characters (see escapeControls), so that a server cannot clear
// the screen, move the cursor, retitle the window or hide text with them.
// Elsewhere (a pipe, a file) it is w itself: the bytes go on as sent, for
// a script that reads them.
func terminalSafe(w io.Writer) io.Writer {
	if isTerminal(w) {
		return escaper{w}
	}
	return w
}

// escaper is an io.Writer that writes each p to w with its control
// characters escaped. Each Write stands alone: a UTF-8 sequence split
// between two writes shows as escaped bytes.
type escaper struct{ w io.Writer }

// Write writes p, escaped, and reports all of p written when that
// succeeds.
func (e escaper) Write(p []byte) (int, error) {
	if _, err := e.w.Write(escapeControls(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeControls returns p with the characters a terminal would act on
// written as strconv quotes them: C0 controls but '\n' and '\t' (ESC as
// \x1b, BEL as \a), a '\r' not followed by '\n', DEL (\x7f), C1 controls
// (U+0080 to U+009F, as \u009b) and bytes that are not UTF-8 (as \x9b, so
// that an 8-bit CSI cannot act either). Text, newlines and tabs are left
// as they are. It returns p itself when there is nothing to escape.
func escapeControls(p []byte) []byte {
	var out []byte // nil until something needs escaping
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		var esc string
		switch {
		case r == utf8.RuneError && size == 1:
			esc = `\x` + string(hex[p[i]>>4]) + string(hex[p[i]&0xf])
		case r == '\n' || r == '\t':
		case r == '\r':
			if i+1 == len(p) || p[i+1] != '\n' {
				esc = `\r`
			}
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			q := strconv.QuoteRune(r) // '\x1b', '\a', '\u009b'
			esc = q[1 : len(q)-1]
		}
		if esc != "" && out == nil {
			out = append(make([]byte, 0, len(p)+16), p[:i]...)
		}
		if esc != "" {
			out = append(out, esc...)
		} else if out != nil {
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if out == nil {
		return p
	}
	return out
}

const hex = "0123456789abcdef"
