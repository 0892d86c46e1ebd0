// The wire check: a send checked against its scope's hold again once its
// connection is ready, before its request is written.

package heed

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"reflect"
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
// made only where the race happens: for the sends of a scope throttled
// within wireCheckFor, a herd that is being throttled, and for a send that
// takes its scope's sends in flight to a new high, of two or more: a herd
// forming, whose sends dial while the first answers, and a first throttle,
// come back. It sees the
// holds this Transport set or learned, and its gate's when that is heed's
// own; another process's hold in a shared gate it asks for only after a
// wait, since asking is a round trip.

// wireCheckFor is how long after a throttle a scope's sends are checked
// again once their connection is ready.
const wireCheckFor = time.Minute

// holdRecheck is how long a send may wait for a slot after its gate let it
// through before its scope's hold is asked for again, of its gate too.
const holdRecheck = time.Millisecond

// errWireDeferred ends a send that the wire check deferred.
var errWireDeferred = errors.New("heed: deferred before the request was written")

// wireCheck is the check of one send.
type wireCheck struct {
	call    call // a copy as the send left: the RoundTrip's own stays on its stack
	attempt int
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	deferred *DeferredError // set when the check deferred the send
	// wrote is when the check let the send be written: when it went, as
	// the server sees the order of its scope's sends, which the time it
	// passed the gate, before dialing, is not. Zero until then.
	wrote time.Time
	// token is the pacing token the send went on, once the check let it
	// be written: another than the gate's, when it waited for a hold
	token token
}

// wired returns out to be sent with the wire check, when its scope was
// throttled lately or its herd is forming; else out itself and nil.
func (c *call) wired(out *http.Request, attempt int, now time.Time, forming bool) (*http.Request, *wireCheck) {
	if !forming {
		at := c.local.throttledAt.Load()
		if at == 0 || mono(now)-at > int64(wireCheckFor) {
			return out, nil
		}
	}
	ctx, cancel := context.WithCancelCause(out.Context())
	check := &wireCheck{call: *c, attempt: attempt, cancel: cancel}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: check.gotConn})
	return out.WithContext(ctx), check
}

// gotConn runs once the send's connection is ready, before its request is
// written: it waits out a hold of the scope that ends later, or defers.
// Deferred, the connection is made to refuse the write (unwritable): net/
// http writes the request once GotConn returns, whatever its context.
func (check *wireCheck) gotConn(info httptrace.GotConnInfo) {
	c := &check.call
	wrote, waited, err := c.awaitHold(check.attempt, false, "wire")
	for waited && err == nil {
		// Caught by the hold, the send goes as one that waited for it at
		// the gate: in the scope's pace, not with every other send the
		// hold caught, all at its end.
		var paced bool
		paced, err = c.pace(check.attempt, time.Now())
		wrote = time.Now()
		if err != nil || !paced || !c.holdEnd(false).After(wrote) {
			break
		}
		// A hold learned while it waited for its token holds it too, as
		// at the gate: the token goes back, and it takes another after.
		c.local.limiter.cancel(c.token)
		wrote, waited, err = c.awaitHold(check.attempt, false, "wire")
	}
	var de *DeferredError
	if !errors.As(err, &de) {
		check.mu.Lock()
		check.wrote, check.token = wrote, c.token
		check.mu.Unlock()
		return // a context that ends fails the send itself
	}
	check.mu.Lock()
	check.deferred = de
	check.mu.Unlock()
	unwritable(info.Conn, c.transport.next)
	check.cancel(errWireDeferred)
}

// awaitHold waits out the scope's hold before attempt is written, as this
// Transport and its gate know it, logged with source; or returns a
// *DeferredError when that wait does not fit, or the context's error if it
// ends first. It returns the time the hold was found over, and whether it
// waited for it. A gate across the network is asked when remote is set,
// and after any wait, since a hold may have been set elsewhere meanwhile;
// heed's own gate, always.
func (c *call) awaitHold(attempt int, remote bool, source string) (found time.Time, waited bool, err error) {
	p := c.policy
	c.lookName(remote, remote) // remote: after a wait for a slot; else merged at the gate, just before
	for ; ; waited, remote = true, true {
		if waited {
			c.lookName(true, true) // a limit learned during the wait holds the send
		}
		until := c.holdEnd(remote)
		now := time.Now()
		if !until.After(now) {
			return now, waited, nil
		}
		wait := until.Sub(now)
		d := c.waitDecision(attempt, now, wait, reasonCoolingDown, source)
		if !c.deadline.Fits(now, wait, wait, p.maxWait, max(p.reserve, c.took)) {
			return now, waited, c.deferred(&d, attempt-1)
		}
		d.kind = EventGateWait
		c.decide(zapcore.InfoLevel, &d)
		if err := rules.Sleep(c.ctx, wait); err != nil {
			return now, waited, err
		}
	}
}

// holdEnd is the end of the scope's hold: the latest of this Transport's
// own and its gate's, the gate asked when it answers
// in process or remote is set. A quota the scope published leaves a gate
// other than heed's own unasked: its NotBefore may be that quota's reset,
// which a send already admitted does not wait for.
func (c *call) holdEnd(remote bool) time.Time {
	until := c.local.heldUntil.load()
	if _, own := c.transport.admit.(ownAdmission); !own && (!remote || c.local.published.Load()) {
		return until
	}
	if c.named != "" {
		// A send in a named limit (named.go): that limit's hold too, and,
		// when it was admitted elsewhere (the limit was learned since),
		// its spent quota.
		var nb time.Time
		if c.named != c.takenIn {
			nb = c.transport.admit.reset(c.ctx, c.named)
		} else {
			nb, _ = c.transport.admit.hold(c.ctx, c.named)
		}
		if nb.After(until) {
			until = nb
		}
	}
	nb, _ := c.transport.admit.hold(c.ctx, c.scope)
	if nb.After(until) {
		c.heldElsewhere(time.Now(), nb)
		return nb
	}
	return until
}

// unwritable makes conn fail every write from now on, so that the request
// net/http writes once GotConn returns fails with nothing written, and the
// connection is closed; ending the send's context alone races that write.
// A connection that may carry HTTP/2 is shared by other streams and is left
// as it is: there the context's end is all that stops the send, and it may
// lose the race.
func unwritable(conn net.Conn, next http.RoundTripper) {
	if conn == nil || mayCarryHTTP2(conn, next) {
		return
	}
	_ = conn.SetWriteDeadline(time.Unix(1, 0))
}

// mayCarryHTTP2 reports whether conn may carry HTTP/2: a TLS connection
// that negotiated it, or a plain one under a transport that speaks HTTP/2
// unencrypted (a net/http Transport configured to, or golang.org/x/net/
// http2's). A plain connection under any other transport, a wrapper of
// net/http's included, is taken to carry HTTP/1.
func mayCarryHTTP2(conn net.Conn, next http.RoundTripper) bool {
	if tc, ok := conn.(*tls.Conn); ok {
		return tc.ConnectionState().NegotiatedProtocol == "h2"
	}
	if t, ok := next.(*http.Transport); ok {
		return t.Protocols != nil && t.Protocols.UnencryptedHTTP2()
	}
	typ := reflect.TypeOf(next)
	if typ != nil && typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	return typ != nil && typ.PkgPath() == "golang.org/x/net/http2"
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

// went returns when the checked send went, and on which pacing token:
// when the check let it be written, or sent and k, when it did not run (no
// connection was made).
func (check *wireCheck) went(sent time.Time, k token) (time.Time, token) {
	check.mu.Lock()
	defer check.mu.Unlock()
	if check.wrote.After(sent) {
		return check.wrote, check.token
	}
	return sent, k
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
