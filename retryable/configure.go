// Configuring: installing heed's decisions on a retryablehttp.Client.

package retryable

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/link"
)

// MaxRetries is the value Configure gives Client.RetryMax: high enough that
// each route's Policy.MaxAttempts decides, low enough to bound the loop
// should the adapter's hooks be replaced.
const MaxRetries = 1 << 10

// Configure makes c decide as heed does, with the policies that opts give
// (the same options heed.New takes; WithGate, WithLogger and WithObserver
// have no effect here). It installs c.CheckRetry, c.Backoff, c.ErrorHandler and
// c.PrepareRetry, keeping a PrepareRetry already set, sets c.RetryMax to
// MaxRetries, and wraps the Transport of a copy of c.HTTPClient (a new
// pooled client when nil) to see each attempt. Call it once, after setting
// c.HTTPClient; the package documentation lists what it cannot change. It
// panics, as heed.New does, on an invalid or conflicting route pattern.
func Configure(c *retryablehttp.Client, opts ...heed.Option) {
	a := &adapter{c: c, t: heed.New(nil, opts...)}
	hc := c.HTTPClient
	if hc == nil {
		hc = cleanhttp.DefaultPooledClient()
	}
	cp := *hc
	next := cp.Transport
	a.prepare = c.PrepareRetry
	if r, ok := next.(*recorder); ok {
		// Configured before: wrap the original transport once, and keep
		// the caller's PrepareRetry rather than the previous adapter's.
		next = r.next
		if a.prepare != nil && r.owner != nil && sameFunc(a.prepare, r.owner.prepareRetry) {
			a.prepare = r.owner.prepare
		}
	}
	if next == nil {
		next = http.DefaultTransport
	}
	a.rec = &recorder{next: next, owner: a}
	cp.Transport = a.rec
	c.HTTPClient = &cp

	c.RetryMax = MaxRetries
	c.CheckRetry = a.checkRetry
	c.Backoff = a.backoff
	c.ErrorHandler = a.errorHandler
	c.PrepareRetry = a.prepareRetry
}

// sameFunc reports whether two PrepareRetry values run the same code, as
// the method values of two adapters do.
func sameFunc(f, g retryablehttp.PrepareRetry) bool {
	return reflect.ValueOf(f).Pointer() == reflect.ValueOf(g).Pointer()
}

// adapter holds what the hooks installed on one client share.
type adapter struct {
	c       *retryablehttp.Client
	t       *heed.Transport // resolves each request's policy; never sends
	rec     *recorder
	prepare retryablehttp.PrepareRetry // the caller's own, run after ours
	starts  handoffs
	// waits holds the wait CheckRetry chose for a response the recorder did
	// not see (the client's HTTPClient replaced after Configure), for
	// Backoff, which runs once the body that may have given it is drained.
	waits sync.Map // *http.Response → time.Duration
}

// policy returns the policy of the route req matches, every default filled
// in.
func (a *adapter) policy(req *http.Request) heed.Policy {
	return link.Policy(a.t, req).(heed.Policy)
}

// prepareRetry runs before every retry with retryablehttp's own copy of the
// request: it counts the attempt on that copy's context, then runs the
// PrepareRetry the client had before Configure.
func (a *adapter) prepareRetry(req *http.Request) error {
	ctx := req.Context()
	st := stateOf(ctx)
	if st == nil {
		st = &callState{attempt: 1}
		st.start = time.Now() // a late guess, should the handoff miss
		if start, ok := a.starts.take(ctx, req.URL); ok {
			st.start = start
		}
		// req is the copy retryablehttp made for this retry, never the
		// caller's: giving it a context that carries the count is safe.
		*req = *req.WithContext(context.WithValue(ctx, stateKey{}, st))
	}
	st.attempt++
	if a.prepare != nil {
		return a.prepare(req)
	}
	return nil
}
