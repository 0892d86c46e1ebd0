// Request bodies: how each attempt of one RoundTrip gets its own copy of
// the request body, or why the request is sent only once, and the last
// answer kept while the next copy may still fail to be made.

package heed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"sync"
	"time"
)

// bodyKind says how a request body is sent again.
type bodyKind uint8

const (
	bodyNone     bodyKind = iota // nil or http.NoBody: nothing to replay
	bodyGetBody                  // the caller's GetBody makes each copy
	bodyReaderAt                 // an io.ReaderAt of known size, read in place
	bodyBuffered                 // read into memory, within the buffer bound
	bodyOnce                     // too large to buffer: sent once, never again
)

// replay gives each attempt of one RoundTrip its own request body, and owns
// the caller's body until it is handed to the inner transport, closing it
// exactly once.
type replay struct {
	kind   bodyKind
	orig   io.ReadCloser // the caller's body
	handed bool          // orig was given to next, which closes it
	closed bool

	getBody func() (io.ReadCloser, error)
	ra      io.ReaderAt
	off, n  int64
	buf     []byte
	once    *onceBody
}

// prepareBody decides how req's body is replayed. It reads the body only
// when nothing else can replay it, and then at most bound+1 bytes.
func prepareBody(req *http.Request, bound int64) (replay, error) {
	r := replay{orig: req.Body}
	if req.Body == nil || req.Body == http.NoBody {
		r.kind = bodyNone
		return r, nil
	}
	if req.GetBody != nil {
		r.kind, r.getBody = bodyGetBody, req.GetBody
		return r, nil
	}
	if ra, off, n, ok := readerAt(req.Body, req.ContentLength); ok {
		r.kind, r.ra, r.off, r.n = bodyReaderAt, ra, off, n
		return r, nil
	}
	buf, err := io.ReadAll(io.LimitReader(req.Body, bound+1))
	if err != nil {
		r.close()
		return r, err
	}
	if int64(len(buf)) <= bound {
		r.kind, r.buf = bodyBuffered, buf
		r.close() // read to the end: the caller's body is done with
		return r, nil
	}
	r.kind = bodyOnce
	r.once = &onceBody{Reader: io.MultiReader(bytes.NewReader(buf), req.Body), c: req.Body}
	return r, nil
}

// readerAt reports whether body can be read in place at every attempt: an
// io.ReaderAt whose size is known from contentLength, a Size method, or
// Stat of a regular file. off is where reading starts (the current offset
// of a Seeker) and n how many bytes are sent.
func readerAt(body io.ReadCloser, contentLength int64) (ra io.ReaderAt, off, n int64, ok bool) {
	ra, ok = body.(io.ReaderAt)
	if !ok {
		return nil, 0, 0, false
	}
	if s, isSeeker := body.(io.Seeker); isSeeker {
		cur, err := s.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, 0, 0, false
		}
		off = cur
	}
	if contentLength > 0 {
		return ra, off, contentLength, true
	}
	var size int64
	switch b := body.(type) {
	case interface{ Size() int64 }:
		size = b.Size()
	case interface{ Stat() (fs.FileInfo, error) }:
		fi, err := b.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return nil, 0, 0, false
		}
		size = fi.Size()
	default:
		return nil, 0, 0, false
	}
	if size < off {
		return nil, 0, 0, false
	}
	return ra, off, size - off, true
}

// swaps reports whether attempt needs a body other than the caller's own.
func (r *replay) swaps(attempt int) bool {
	switch r.kind {
	case bodyNone:
		return false
	case bodyGetBody:
		return attempt > 1
	}
	return true
}

// canReplay reports whether another attempt can carry the body.
func (r *replay) canReplay() bool { return r.kind != bodyOnce }

// set gives out, a clone of the caller's request, its body for attempt.
func (r *replay) set(out *http.Request, attempt int) error {
	switch r.kind {
	case bodyNone:
		// Without replay (MaxAttempts 1) the clone carries the caller's
		// body itself, which the inner transport then closes.
		if r.orig != nil && out.Body == r.orig {
			r.handed = true
		}
	case bodyGetBody:
		if attempt == 1 {
			r.handed = true
			return nil
		}
		b, err := r.getBody()
		if err != nil {
			return err
		}
		out.Body = b
	case bodyReaderAt:
		ra, off, n := r.ra, r.off, r.n
		out.Body = io.NopCloser(io.NewSectionReader(ra, off, n))
		out.ContentLength = n
		out.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(io.NewSectionReader(ra, off, n)), nil
		}
		if n == 0 {
			out.Body, out.GetBody = http.NoBody, nil
		}
	case bodyBuffered:
		buf := r.buf
		out.ContentLength = int64(len(buf))
		if len(buf) == 0 {
			out.Body, out.GetBody = http.NoBody, nil
			return nil
		}
		out.Body = io.NopCloser(bytes.NewReader(buf))
		out.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(buf)), nil
		}
	case bodyOnce:
		if attempt > 1 {
			return errors.New("heed: request body cannot be replayed")
		}
		out.Body = r.once
		r.handed = true
	}
	return nil
}

// sendsOriginal records that the caller's request went out as it is.
func (r *replay) sendsOriginal() { r.handed = true }

// close closes the caller's body unless the inner transport has it.
func (r *replay) close() {
	if r.handed || r.closed || r.orig == nil {
		return
	}
	r.closed = true
	r.orig.Close()
}

// onceBody streams a body too large to buffer: the buffered prefix, then the
// rest. Closing it closes the caller's body once.
type onceBody struct {
	io.Reader
	c    io.Closer
	once sync.Once
}

func (b *onceBody) Close() error {
	var err error
	b.once.Do(func() { err = b.c.Close() })
	return err
}

// request returns what attempt sends: the caller's request itself when
// nothing about it changes, else a clone with a fresh body.
func (c *call) request(attempt int) (*http.Request, error) {
	if attempt == 1 && c.newKey == "" && !c.body.swaps(attempt) {
		if c.body.orig != nil {
			c.body.sendsOriginal()
		}
		return c.req, nil
	}
	out := c.req.Clone(c.ctx)
	if c.newKey != "" {
		out.Header.Set(c.policy.keyHeader, c.newKey)
	}
	if err := c.body.set(out, attempt); err != nil {
		return nil, fmt.Errorf("heed: replaying request body: %w", err)
	}
	return out, nil
}

// kept is an attempt's outcome, kept through the wait before a retry whose
// body the caller's GetBody makes: when GetBody then fails, the caller gets
// this outcome, as it was, rather than heed's error.
type kept struct {
	resp *http.Response // its body read into memory; nil with a transport error
	err  error
	d    decision // the retry decision made of it
}

// keep discards resp as every retry does, first keeping the outcome when
// the next attempt's body comes from GetBody, which may fail: the
// transport error, or the response with its body read whole, when the body
// ends within the draining bounds. A longer body is discarded, not kept.
func (c *call) keep(resp *http.Response, d *decision) *kept {
	if c.body.kind != bodyGetBody {
		discard(resp)
		return nil
	}
	k := &kept{err: c.err, d: *d}
	if resp == nil {
		return k
	}
	body, whole := drain(resp, true)
	if !whole {
		return nil
	}
	r := *resp
	r.Body = http.NoBody
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	k.resp = &r
	return k
}

// replayFailed ends a RoundTrip whose next attempt's body could not be
// made (err): with the last attempt's response or error as it was, when it
// was kept, else with err.
func (c *call) replayFailed(attempt int, err error) (*http.Response, error) {
	k := c.kept
	c.kept = nil
	if k == nil {
		return nil, err
	}
	d := k.d
	d.wait, d.source, d.retryAt = 0, "", time.Time{}
	return c.giveUp(&d, "body not replayable", k.resp, k.err)
}
