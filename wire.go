// The wire check: a send checked against its scope's hold again once its
// connection is ready, before its request is written.

package heed

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/heed-go/heed/internal/rules"
)

// The wire check: a send that passed the gate may still be dialing, or
// waiting for a connection, when another send of its scope is throttled.
// It is then checked again once its connection is ready, before its
// request is written (net/http's httptrace GotConn), and held until the
// throttle's hold ends, or deferred unsent when that wait does not fit.
//
// The check costs a trace, a context and a request copy per send, so it is
// made only for the sends of a scope throttled within wireCheckFor: a herd
// that is being throttled, which is where the race happens. It sees the
// holds this Transport set, not those another process set in a shared gate.

// wireCheckFor is how long after a throttle a scope's sends are checked
// again once their connection is ready.
const wireCheckFor = time.Minute

// errWireDeferred ends a send that the wire check deferred.
var errWireDeferred = errors.New("heed: deferred before the request was written")

// wireCheck is the check of one send.
type wireCheck struct {
	call    call // a copy as the send left: the RoundTrip's own stays on its stack
	attempt int
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	deferred *DeferredError // set when the check deferred the send
}

// wired returns out to be sent with the wire check, when its scope was
// throttled lately; else out itself and nil.
func (c *call) wired(out *http.Request, attempt int, now time.Time) (*http.Request, *wireCheck) {
	at := c.local.throttledAt.Load()
	if at == 0 || now.UnixNano()-at > int64(wireCheckFor) {
		return out, nil
	}
	ctx, cancel := context.WithCancelCause(out.Context())
	check := &wireCheck{call: *c, attempt: attempt, cancel: cancel}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: check.gotConn})
	return out.WithContext(ctx), check
}

// gotConn runs once the send's connection is ready, before its request is
// written: it waits out a hold of the scope that ends later, or defers.
func (check *wireCheck) gotConn(httptrace.GotConnInfo) {
	c := &check.call
	until := c.local.heldUntil.Load()
	now := time.Now()
	if until <= now.UnixNano() {
		return
	}
	wait := time.Duration(until - now.UnixNano())
	p := c.policy
	d := c.waitDecision(check.attempt, now, wait, reasonCoolingDown, "wire")
	if !c.deadline.Fits(now, wait, wait, p.maxWait, max(p.reserve, c.took)) {
		de := c.deferred(&d, check.attempt-1)
		check.mu.Lock()
		check.deferred = de
		check.mu.Unlock()
		check.cancel(errWireDeferred)
		return
	}
	d.kind = EventGateWait
	c.decide(zapcore.InfoLevel, &d)
	_ = rules.Sleep(c.ctx, wait) // a context that ends fails the send itself
}

// finish ends the check once the send returned: a deferred send becomes
// its *DeferredError; a response's body ends the send's context when it is
// closed; a failed send ends it at once.
func (check *wireCheck) finish(resp *http.Response, err error) (*http.Response, *DeferredError) {
	check.mu.Lock()
	de := check.deferred
	check.mu.Unlock()
	if de != nil {
		if resp != nil {
			discard(resp)
		}
		check.cancel(nil)
		return nil, de
	}
	if resp == nil || resp.Body == nil {
		check.cancel(nil)
		return resp, nil
	}
	resp.Body = onClose(resp.Body, func() { check.cancel(nil) })
	return resp, nil
}

// onClose returns body, calling f once when it is first closed. A body that
// is also an io.Writer (a 101 Switching Protocols answer's connection)
// stays one.
func onClose(body io.ReadCloser, f func()) io.ReadCloser {
	if rw, ok := body.(io.ReadWriteCloser); ok {
		return &closingReadWriter{ReadWriteCloser: rw, closer: closer{f: f}}
	}
	return &closingReader{ReadCloser: body, closer: closer{f: f}}
}

// closer calls f once.
type closer struct {
	once sync.Once
	f    func()
}

// closingReader is a body that calls its closer when closed.
type closingReader struct {
	io.ReadCloser
	closer
}

func (b *closingReader) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.f)
	return err
}

// closingReadWriter is a read-write body that calls its closer when closed.
type closingReadWriter struct {
	io.ReadWriteCloser
	closer
}

func (b *closingReadWriter) Close() error {
	err := b.ReadWriteCloser.Close()
	b.once.Do(b.f)
	return err
}
