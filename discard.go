// Discarding a response: drained within bounds, so that its connection
// is reused, and closed.

package heed

import (
	"io"
	"net/http"
	"time"
)

// Draining bounds: a discarded response is read this far, for this long, so
// that its connection can be reused, and then closed.
const (
	drainBytes = 64 << 10
	drainTime  = 250 * time.Millisecond
)

// discard drains and closes a response that will not be delivered, bounded
// in bytes and time so that an endless body cannot stall a retry.
func discard(resp *http.Response) { drain(resp, false) }

// drain reads resp's body, at most drainBytes for at most drainTime, and
// closes it. With keep, it returns what it read, and whether that is the
// whole body: it ended short of drainBytes, or at its Content-Length.
func drain(resp *http.Response, keep bool) ([]byte, bool) {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return nil, true
	}
	body := resp.Body
	type drained struct {
		b     []byte
		whole bool
	}
	done := make(chan drained, 1)
	go func() {
		if !keep {
			_, _ = io.CopyN(io.Discard, body, drainBytes)
			done <- drained{}
			return
		}
		b, err := io.ReadAll(io.LimitReader(body, drainBytes))
		done <- drained{b, err == nil && (len(b) < drainBytes || resp.ContentLength == int64(len(b)))}
	}()
	timer := time.NewTimer(drainTime)
	var got drained
	select {
	case got = <-done:
	case <-timer.C:
	}
	timer.Stop()
	body.Close()
	return got.b, got.whole
}
