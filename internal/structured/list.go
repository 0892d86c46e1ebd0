// Package structured parses the one Structured Field (RFC 9651) heed reads:
// a List of Items whose parameters r and t are non-negative Integers, as the
// RateLimit field (draft-ietf-httpapi-ratelimit-headers-10) sends. Every
// kind of bare item is parsed and checked; only r and t are kept.
package structured

import "unicode/utf8"

// maxDisplayString is the most decoded bytes a Display String may hold.
// heed reads no field line longer than this, so no valid one is refused.
const maxDisplayString = 128

// A List walks one field line of a List without allocating. Its zero
// value is an empty List; it is not safe for concurrent use.
type List struct {
	s string
	i int
}

// NewList returns a List over line, which has no spaces or tabs around it.
func NewList(line string) List { return List{s: line} }

// Done reports whether every member of the line has been read.
func (p *List) Done() bool { return p.done() }

// Next reads the next member, which must be an Item, with its Parameters
// and the comma and spaces after it, and returns the Integer values of its
// parameters r (required) and t (-1 when absent). ok is false on bad
// syntax, an Inner List, an r or t that is not a non-negative Integer, a
// missing r, or a trailing comma, and the rest of the line is then unread.
func (p *List) Next() (r, t int64, ok bool) {
	r, t, ok = p.serviceLimit()
	if !ok {
		return 0, 0, false
	}
	p.skipOWS()
	if p.done() {
		return r, t, true
	}
	if p.s[p.i] != ',' {
		return 0, 0, false
	}
	p.i++
	p.skipOWS()
	if p.done() {
		return 0, 0, false // trailing comma
	}
	return r, t, true
}

func (p *List) done() bool { return p.i >= len(p.s) }

func (p *List) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// serviceLimit parses one Item with its Parameters and returns its r and t
// (t is -1 when absent).
func (p *List) serviceLimit() (r, t int64, ok bool) {
	if p.done() || p.s[p.i] == '(' {
		return 0, 0, false // inner lists are no service limit
	}
	if _, _, ok := p.bareItem(); !ok {
		return 0, 0, false
	}
	r, t = -1, -1
	rInt, tSet, tInt := false, false, false
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		for p.i < len(p.s) && p.s[p.i] == ' ' {
			p.i++
		}
		key, ok := p.key()
		if !ok {
			return 0, 0, false
		}
		isInt, n := false, int64(0) // a bare key is Boolean true
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if isInt, n, ok = p.bareItem(); !ok {
				return 0, 0, false
			}
		}
		switch key { // a repeated key overrides the earlier one
		case "r":
			r, rInt = n, isInt
		case "t":
			t, tSet, tInt = n, true, isInt
		}
	}
	if !rInt || r < 0 || tSet && (!tInt || t < 0) {
		return 0, 0, false
	}
	if !tSet {
		t = -1
	}
	return r, t, true
}

// key parses a parameter key: ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" /
// "-" / "." / "*" ).
func (p *List) key() (string, bool) {
	start := p.i
	if p.done() || !(isLower(p.s[p.i]) || p.s[p.i] == '*') {
		return "", false
	}
	for p.i++; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' && c != '.' && c != '*' {
			break
		}
	}
	return p.s[start:p.i], true
}

// bareItem parses any bare item; isInt and n tell an Integer and its value.
func (p *List) bareItem() (isInt bool, n int64, ok bool) {
	if p.done() {
		return false, 0, false
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return false, 0, p.str()
	case c == '*' || isAlpha(c):
		p.token()
		return false, 0, true
	case c == ':':
		return false, 0, p.byteSeq()
	case c == '?':
		p.i++
		if p.done() || p.s[p.i] != '0' && p.s[p.i] != '1' {
			return false, 0, false
		}
		p.i++
		return false, 0, true
	case c == '@': // Date: an Integer of seconds
		p.i++
		if p.done() || p.s[p.i] != '-' && !isDigit(p.s[p.i]) {
			return false, 0, false
		}
		isInt, _, ok := p.number()
		return false, 0, ok && isInt
	case c == '%':
		return false, 0, p.displayString()
	}
	return false, 0, false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fraction digits).
func (p *List) number() (isInt bool, n int64, ok bool) {
	neg := false
	if p.s[p.i] == '-' {
		neg = true
		p.i++
	}
	start, dot := p.i, -1
	if p.done() || !isDigit(p.s[p.i]) {
		return false, 0, false
	}
scan:
	for ; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		switch {
		case isDigit(c):
			if dot < 0 {
				n = n*10 + int64(c-'0')
			}
		case c == '.' && dot < 0:
			if p.i-start > 12 {
				return false, 0, false
			}
			dot = p.i
		default:
			break scan
		}
		if dot < 0 && p.i+1-start > 15 || p.i+1-start > 16 {
			return false, 0, false
		}
	}
	if dot < 0 {
		if neg {
			n = -n
		}
		return true, n, true
	}
	if frac := p.i - dot - 1; frac < 1 || frac > 3 {
		return false, 0, false
	}
	return false, 0, true
}

// str parses a String: printable ASCII, with \" and \\ escapes.
func (p *List) str() bool {
	for p.i++; p.i < len(p.s); {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.done() || p.s[p.i] != '"' && p.s[p.i] != '\\' {
				return false
			}
			p.i++
		case c == '"':
			return true
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false
}

// token parses the rest of a Token once its first character is known good.
func (p *List) token() {
	for p.i++; p.i < len(p.s) && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/'); p.i++ {
	}
}

// byteSeq parses a Byte Sequence: base64 characters between colons.
func (p *List) byteSeq() bool {
	for p.i++; p.i < len(p.s); {
		c := p.s[p.i]
		p.i++
		if c == ':' {
			return true
		}
		if !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return false
}

// displayString parses a Display String: %" then printable ASCII with
// lowercase %xx escapes that decode to valid UTF-8, then ".
func (p *List) displayString() bool {
	p.i++
	if p.done() || p.s[p.i] != '"' {
		return false
	}
	var buf [maxDisplayString]byte
	n := 0
	for p.i++; p.i < len(p.s); {
		c := p.s[p.i]
		p.i++
		switch {
		case c < 0x20 || c > 0x7e:
			return false
		case c == '"':
			return utf8.Valid(buf[:n])
		case c == '%':
			if p.i+2 > len(p.s) {
				return false
			}
			hi, ok1 := lowerHex(p.s[p.i])
			lo, ok2 := lowerHex(p.s[p.i+1])
			if !ok1 || !ok2 {
				return false
			}
			p.i += 2
			c = hi<<4 | lo
		}
		if n == len(buf) {
			return false
		}
		buf[n] = c
		n++
	}
	return false
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }

func lowerHex(c byte) (byte, bool) {
	switch {
	case isDigit(c):
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// isTchar reports whether c is an RFC 9110 token character.
func isTchar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
