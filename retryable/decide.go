// Deciding: heed's verdict on one attempt, as retryablehttp's CheckRetry.

package retryable

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// checkRetry is the client's CheckRetry: heed's decision on one attempt.
// It returns true to retry, false with a nil error to hand the response or
// error to the caller as it is, and false with a *heed.DeferredError when
// the wait does not fit.
func (a *adapter) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if resp != nil && err != nil {
		// retryablehttp's second call, after the request's response
		// handler failed: the handler's verdict stands.
		a.rec.forget(resp)
		return false, nil
	}
	now := time.Now()
	at, sent := a.attemptOf(ctx, resp, err)
	if sent == nil {
		a.rec.forget(resp)
		return false, nil
	}
	orig := firstHop(sent)
	p := a.policy(orig)

	attempt, start := 1, now
	if at != nil {
		start = now.Add(-at.took)
	}
	if st := stateOf(ctx); st != nil {
		attempt = st.attempt
		if !st.start.IsZero() {
			start = st.start
		}
	}

	cerr := err
	if at != nil && err != nil {
		cerr = at.err
	} else if ue := (*url.Error)(nil); errors.As(err, &ue) {
		cerr = ue.Err
	}
	v := p.Classify(sent, resp, cerr)

	deliver := func() (bool, error) {
		a.rec.forget(resp)
		return false, nil
	}
	switch {
	case v.Class != heed.Throttled && v.Class != heed.Transient && v.Class != heed.Ambiguous:
		return deliver() // Deliver, Terminal, or a class heed does not know
	case attempt >= p.MaxAttempts || attempt > a.c.RetryMax:
		return deliver()
	case v.Class == heed.Ambiguous && !replaySafe(orig, p):
		return deliver()
	case ctx.Err() != nil:
		return deliver()
	}

	base, wait := chooseWait(resp, v, p, attempt, now)

	b := rules.NewDeadline(ctx, start, p.MaxElapsed)
	reserve := p.Reserve
	if at != nil {
		reserve = max(reserve, at.took)
	}
	if !b.Fits(now, base, wait, p.MaxWait, reserve) {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		var last error
		if err != nil {
			last = cerr
		}
		return false, &heed.DeferredError{
			Method:   orig.Method,
			URL:      rules.RedactURL(orig.URL),
			Route:    p.Name,
			Key:      rules.RequestKey(orig.Header, p.KeyHeader),
			Attempts: attempt,
			Status:   status,
			Reason:   v.Reason,
			Wait:     wait,
			RetryAt:  now.Add(wait).Round(0),
			Left:     b.Left(now),
			Err:      last,
		}
	}

	if attempt == 1 && p.MaxElapsed > 0 {
		a.starts.put(ctx, orig.URL, start)
	}
	if resp == nil {
		// Backoff will not know which call it serves: wait here.
		if err := rules.Sleep(ctx, wait); err != nil {
			return false, err
		}
		return true, nil
	}
	if at := a.rec.claim(resp, true); at != nil {
		at.wait = wait
	} else {
		a.waits.Store(resp, wait)
	}
	return true, nil
}

// chooseWait returns the wait before retry (1 for the first retry), before
// jitter (base) and with it: the server's hint (a header's, or the
// verdict's Wait, the longer) raised to MinWait plus
// jitter, or with no valid hint the policy's Backoff.
func chooseWait(resp *http.Response, v heed.Verdict, p heed.Policy, retry int, now time.Time) (base, wait time.Duration) {
	hint, hinted := time.Duration(0), false
	if resp != nil {
		hint, _, hinted = heed.Hint(resp, now)
	}
	if v.Source != "" && v.Wait >= 0 && (!hinted || v.Wait > hint) {
		hint, hinted = v.Wait, true // the classifier's wait, as heed's Transport reads it
	}
	if hinted {
		base = max(hint, p.MinWait)
		return base, base + rules.RandUpTo(p.Jitter)
	}
	base = p.Backoff(retry)
	return base, base
}

// attemptOf returns what the recorder saw of the attempt that produced
// resp or err, and the request that was sent: from the recorder when it saw
// the attempt, else rebuilt from what resp or err carries. It returns a nil
// request when there is nothing to judge.
func (a *adapter) attemptOf(ctx context.Context, resp *http.Response, err error) (*attempt, *http.Request) {
	if resp != nil {
		if at := a.rec.claim(resp, true); at != nil {
			return at, at.req
		}
		if resp.Request != nil {
			return nil, resp.Request
		}
		return nil, nil
	}
	var ae *attemptError
	if errors.As(err, &ae) {
		return ae.at, ae.at.req
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		u, perr := url.Parse(ue.URL)
		if perr != nil {
			return nil, nil
		}
		req := (&http.Request{Method: strings.ToUpper(ue.Op), URL: u, Host: u.Host, Header: http.Header{}}).WithContext(ctx)
		return nil, req
	}
	return nil, nil
}

// firstHop returns the request that began a chain of redirects.
func firstHop(r *http.Request) *http.Request {
	for i := 0; i < 64 && r.Response != nil && r.Response.Request != nil; i++ {
		r = r.Response.Request
	}
	return r
}

// replaySafe reports whether req may be sent again after it may have been
// processed: an idempotent method, an idempotency key, or RetryUnsafe.
func replaySafe(req *http.Request, p heed.Policy) bool {
	return p.RetryUnsafe || rules.Idempotent(req.Method) || rules.RequestKey(req.Header, p.KeyHeader) != ""
}
