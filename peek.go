// Peeking: reading the start of a response body to classify it, while the
// caller still gets the whole body.

package heed

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// PeekBody returns up to n bytes from the start of resp's body and leaves
// resp.Body whole: it yields the same bytes again, then the rest, and its
// Close closes the original. A read error comes with the bytes before it,
// and the body meets it again. A gzip or deflate body the caller asked for
// is decoded (resp.Body stays encoded). Do not modify the bytes.
func PeekBody(resp *http.Response, n int) ([]byte, error) {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody || n <= 0 {
		return nil, nil
	}
	orig := resp.Body
	buf, err := io.ReadAll(io.LimitReader(orig, int64(n)))
	if len(buf) == 0 && err == nil {
		// Keep the body as it is when there was nothing to peek: an empty
		// body needs no wrapper.
		return buf, nil
	}
	resp.Body = &peekedBody{r: io.MultiReader(bytes.NewReader(buf), orig), c: orig}
	return decodePeek(resp.Header, buf, n), err
}

// decodePeek returns the start of the decoded body, at most n bytes, when
// h's Content-Encoding is one net/http leaves encoded for a caller that
// asked for it and the standard library decodes: gzip, x-gzip or deflate.
// Bytes that are not in that encoding come back as they are; bytes that
// are, but cut short, give what decodes before the cut, which may be
// nothing.
func decodePeek(h http.Header, raw []byte, n int) []byte {
	v := h["Content-Encoding"]
	if len(v) != 1 || len(raw) == 0 {
		return raw
	}
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(v[0])) {
	case "gzip", "x-gzip":
		if raw[0] != 0x1f || (len(raw) > 1 && raw[1] != 0x8b) {
			return raw
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil // a gzip header, cut short
		}
		r = zr
	case "deflate":
		// RFC 9110's deflate is zlib-wrapped; some servers send it bare.
		if zr, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			r = zr
		} else if out := readUpTo(flate.NewReader(bytes.NewReader(raw)), n); text(out) && !text(raw) {
			// Bytes that are not a deflate stream often decode to
			// something all the same: take bare deflate only when it
			// turns bytes that are not text into text, as an error body is.
			return out
		} else {
			return raw
		}
	default:
		return raw
	}
	return readUpTo(r, n)
}

// text reports whether b is non-empty UTF-8 without control characters
// other than tab, CR and LF; a cut-off last character counts as text.
func text(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			return len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if r < 0x20 && r != '\t' && r != '\r' && r != '\n' || r == 0x7f {
			return false
		}
		b = b[size:]
	}
	return true
}

// readUpTo reads r until n bytes, its end or an error.
func readUpTo(r io.Reader, n int) []byte {
	out, _ := io.ReadAll(io.LimitReader(r, int64(n)))
	return out
}

// classifyPeekTime bounds how long DefaultClassifier waits for the start of
// a body: a server that sends a 429's headers and then stalls must not hold
// the RoundTrip. Past it the response is classified by its headers alone.
const classifyPeekTime = 500 * time.Millisecond

// peekWithin is PeekBody bounded by d. When the bytes do not come in time,
// it returns nil, and resp.Body becomes a body that, read, waits for them
// and then gives every byte as PeekBody's would: nothing is lost.
func peekWithin(resp *http.Response, n int, d time.Duration) ([]byte, error) {
	return peekUntil(resp, n, d, nil)
}

// peekUntil is peekWithin that also stops reading once enough says the
// bytes read so far are enough (nil: never), as a stream's first event is.
func peekUntil(resp *http.Response, n int, d time.Duration, enough func([]byte) bool) ([]byte, error) {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody || n <= 0 {
		return nil, nil
	}
	orig := resp.Body
	done := make(chan peeked, 1)
	go func() {
		buf := make([]byte, 0, min(n, 512))
		var err error
		for len(buf) < n && err == nil && (enough == nil || !enough(buf)) {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			var k int
			k, err = orig.Read(buf[len(buf):min(cap(buf), n)])
			buf = buf[:len(buf)+k]
		}
		if err == io.EOF {
			err = nil
		}
		done <- peeked{buf, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case p := <-done:
		if len(p.buf) == 0 && p.err == nil {
			return p.buf, nil
		}
		resp.Body = &peekedBody{r: io.MultiReader(bytes.NewReader(p.buf), orig), c: orig}
		return decodePeek(resp.Header, p.buf, n), p.err
	case <-timer.C:
		resp.Body = &pendingBody{done: done, orig: orig}
		return nil, nil
	}
}

// peeked is what a background peek read.
type peeked struct {
	buf []byte
	err error
}

// pendingBody is a response body whose start is still being read in the
// background by peekWithin. Closing it closes the original body, which ends
// that read.
type pendingBody struct {
	done chan peeked
	orig io.ReadCloser
	r    io.Reader
}

func (b *pendingBody) Read(p []byte) (int, error) {
	if b.r == nil {
		got := <-b.done
		b.r = io.MultiReader(bytes.NewReader(got.buf), b.orig)
	}
	return b.r.Read(p)
}

func (b *pendingBody) Close() error { return b.orig.Close() }

// peekedBody is a response body whose start was read by PeekBody.
type peekedBody struct {
	r io.Reader
	c io.Closer
}

func (b *peekedBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *peekedBody) Close() error { return b.c.Close() }
