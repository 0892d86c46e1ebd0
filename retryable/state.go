// Call state: what one Client.Do call's hooks know across its attempts.

package retryable

import (
	"context"
	"net/url"
	"sync"
	"time"
)

// callState is what one Client.Do call's hooks know across its attempts.
// From the first retry on it rides on the context of retryablehttp's own
// copy of the request, which PrepareRetry may replace.
type callState struct {
	attempt int       // the attempt now being sent or judged, from 1
	start   time.Time // when the first attempt was sent; zero: unknown
}

type stateKey struct{}

// stateOf returns the state on ctx, or nil during the first attempt.
func stateOf(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	return st
}

// handoffs carry the first attempt's start time from CheckRetry to the
// first PrepareRetry, the one step no context links. The key is the
// context and the URL that retryablehttp's copies of a request share; two
// concurrent calls that share both can only swap start times taken
// moments apart. Only policies with MaxElapsed use it.
type handoffs struct {
	m sync.Map // handoffKey → *handoff
}

type handoffKey struct {
	ctx context.Context
	u   *url.URL
}

type handoff struct {
	start time.Time
	stop  func() bool
}

// put records start for the call, and forgets it if ctx ends first.
func (h *handoffs) put(ctx context.Context, u *url.URL, start time.Time) {
	k := handoffKey{ctx, u}
	e := &handoff{start: start}
	e.stop = context.AfterFunc(ctx, func() { h.m.CompareAndDelete(k, e) })
	if _, loaded := h.m.LoadOrStore(k, e); loaded {
		e.stop()
	}
}

// take returns and forgets the start recorded for the call.
func (h *handoffs) take(ctx context.Context, u *url.URL) (time.Time, bool) {
	v, ok := h.m.LoadAndDelete(handoffKey{ctx, u})
	if !ok {
		return time.Time{}, false
	}
	e := v.(*handoff)
	e.stop()
	return e.start, true
}
