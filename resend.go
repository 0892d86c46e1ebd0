// Resends: the sends net/http's Transport makes again by itself, beneath
// heed, counted for the observer.

package heed

import (
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// Beneath heed, net/http's Transport sends a request again by itself when
// a connection it reused from its idle pool breaks before the answer:
// always when nothing of the request was written, and, when something was,
// for a request it holds replayable (GET, HEAD, OPTIONS or TRACE, or one
// carrying Idempotency-Key or X-Idempotency-Key, with a body it can rewind).
// It does so at once, with no hint to wait for, on a fresh connection, and
// hands heed only the last outcome. heed can neither see nor stop that from
// outside without changing the request, and the rule is the one heed keeps
// (docs/decisions.md), so it lets net/http do it, and counts it for an
// observer: each connection a send gets fires httptrace's GotConn once, so
// a send that got n connections was sent n − 1 more times.

// resends counts the connections one send got.
type resends struct{ conns atomic.Int32 }

func (r *resends) gotConn(httptrace.GotConnInfo) { r.conns.Add(1) }

// counted returns out with a trace that counts its connections, and the
// count. It costs a trace, a context and a request copy, so it is made
// only for a Transport with an observer.
func counted(out *http.Request) (*http.Request, *resends) {
	r := &resends{}
	ctx := httptrace.WithClientTrace(out.Context(), &httptrace.ClientTrace{GotConn: r.gotConn})
	return out.WithContext(ctx), r
}

// count is how many times net/http sent the request again: 0 for a nil
// count, or a transport that reports no connections.
func (r *resends) count() int {
	if r == nil {
		return 0
	}
	return max(int(r.conns.Load())-1, 0)
}
