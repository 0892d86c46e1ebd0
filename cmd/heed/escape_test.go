package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEscapeControls(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain text", "no such job: café\n\tindented", "no such job: café\n\tindented"},
		{"CSI", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"OSC with BEL", "\x1b]0;title\x07", `\x1b]0;title\a`},
		{"OSC with ST", "\x1b]0;title\x1b\\", `\x1b]0;title\x1b\`},
		{"C1 CSI as UTF-8", "\u009b31m", `\u009b31m`},
		{"8-bit CSI", "\x9b31m", `\x9b31m`},
		{"DEL, backspace, NUL", "a\x7fb\x08c\x00", `a\x7fb\bc\x00`},
		{"CRLF kept", "line\r\nnext\r\n", "line\r\nnext\r\n"},
		{"a lone CR", "shown\rhidden", `shown\rhidden`},
		{"a CR at the end", "end\r", `end\r`},
		{"U+FFFD itself", "\uFFFD", "\uFFFD"},
		{"a cut UTF-8 sequence", "caf\xc3", `caf\xc3`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, string(escapeControls([]byte(tt.in))))
		})
	}
	p := []byte("nothing to escape\n")
	assert.Same(t, &p[0], &escapeControls(p)[0], "returned as is")

	var b bytes.Buffer
	n, err := escaper{&b}.Write([]byte("\x1b[2J"))
	assert.NoError(t, err)
	assert.Equal(t, 4, n, "all of p")
	assert.Equal(t, `\x1b[2J`, b.String())
}
