package heedotel

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/heed-go/heed"
)

// How heed.gate.waiting pairs its +1 and -1.
//
// heed reports a gate wait (EventGateWait) just before it sleeps, and it
// sleeps exactly Wait unless the request's context ends first: the wait
// ends at whichever comes first, and nothing else ends it. So the Observer
// adds 1 when the event arrives and takes it back on whichever of a timer
// of Wait and context.AfterFunc on the request's context fires first, and
// stops the other.
//
// Pairing the +1 with the next event of the same RoundTrip instead does not
// work: an Event names no RoundTrip, and keying on its Context mixes up the
// RoundTrips that share one context (an errgroup's, a server request's);
// and when the context ends during the wait no further event comes at all.
//
// Limits: the Observer's timer starts when it is told, a few microseconds
// before heed's own, so the count can drop that much early. A Gate whose
// NotBefore itself blocks (a remote one) is waiting heed does not report,
// and it is not counted. The Observer holds the request's context only for
// the wait's length, to learn when it ends.
func (o *Observer) gateWait(e *heed.Event) {
	opts := o.gateWaitingOptions(e)
	o.gateWaiting.Add(e.Context, 1, opts.add...)
	w := &gateWaiter{counter: o.gateWaiting, opts: opts}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(e.Wait, w.end)
	w.stopCtx = context.AfterFunc(e.Context, w.end)
}

// gateWaiter is one request waiting at the gate.
type gateWaiter struct {
	counter metric.Int64UpDownCounter
	opts    *measureOpts

	mu      sync.Mutex
	ended   bool
	timer   *time.Timer
	stopCtx func() bool
}

// end takes the request off heed.gate.waiting, once, and stops whichever of
// the timer and the context callback has not fired.
func (w *gateWaiter) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended = true
	w.timer.Stop()
	w.stopCtx()
	w.counter.Add(context.Background(), -1, w.opts.add...)
}
