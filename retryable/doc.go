// Package retryable gives a hashicorp/go-retryablehttp client heed's
// decisions. One call does it:
//
//	c := retryablehttp.NewClient()
//	retryable.Configure(c, heed.WithPolicy(heed.Policy{MaxWait: 30 * time.Second}))
//	resp, err := c.Do(req) // or c.StandardClient().Do(...)
//	var d *heed.DeferredError
//	if errors.As(err, &d) {
//		// persist d.RetryAt with the job
//	}
//
// Configure installs CheckRetry, Backoff, ErrorHandler and PrepareRetry so
// that the client:
//
//   - classifies each response or error with the route's heed.Classifier
//     (heed.DefaultClassifier unless the policy names another), so terminal
//     answers such as an exhausted quota or a 402 are returned at once;
//   - resends an Ambiguous failure (reset, timeout, 500, 502, 504) only when
//     the request is replay-safe: an idempotent method, an Idempotency-Key,
//     X-Idempotency-Key or Policy.KeyHeader header, or Policy.RetryUnsafe;
//   - waits what the server asked for in every form heed.Hint reads, raised
//     to Policy.MinWait and never shortened, plus Policy.Jitter; with no hint
//     it waits Policy.Backoff;
//   - returns a *heed.DeferredError at once, instead of waiting, when that
//     wait exceeds Policy.MaxWait or cannot fit before the context deadline
//     (or Policy.MaxElapsed) with Policy.Reserve or the last attempt's
//     duration to spare. errors.As finds it through Client.Do and through
//     the *http.Client of StandardClient;
//   - stops after the route's Policy.MaxAttempts and returns the last
//     response as it is, body unread, rather than an error.
//
// # Limits the adapter cannot lift
//
// retryablehttp owns the attempt loop, so some of heed's guarantees stay
// with heed.Transport:
//
//   - Bodies: retryablehttp reads a request body that is not a []byte,
//     *bytes.Buffer, *bytes.Reader or io.ReadSeeker wholly into memory before
//     the first attempt, with no bound, and rewinds a ReadSeeker to offset
//     0, not to where it stood. heed's bounded buffer and in-place replay of
//     an io.ReaderAt do not apply. Use heed.Transport for large uploads.
//   - Attempts: CheckRetry is not told the attempt number. The adapter
//     counts attempts itself (PrepareRetry tags retryablehttp's own copy of
//     the request with a counter), enforces each route's MaxAttempts, and
//     sets Client.RetryMax to MaxRetries so that retryablehttp's own limit
//     does not cut a route short. A lower RetryMax set after Configure caps
//     every route.
//   - Waiting: the deadline check happens in CheckRetry, the only hook that
//     sees the context. After a response the wait is handed to Backoff as
//     usual; after a transport error (no response) Backoff cannot tell
//     which request it serves, so CheckRetry waits itself on a timer
//     against the context and Backoff returns 0: retryablehttp then logs
//     "retrying in 0s".
//   - Requests: CheckRetry is not given the request either. Configure wraps
//     the Transport of Client.HTTPClient (a copy of it: an *http.Client
//     shared with other code is left alone) to learn, per attempt, the
//     request sent and how long it took. Set HTTPClient before calling
//     Configure. An attempt the wrapper did not see (HTTPClient replaced
//     later, or an error rewritten by http.Client.Timeout) is classified
//     from what the response or *url.Error carries: without its headers,
//     so an idempotency key on it goes unseen and the failure is not
//     resent unless the method allows it.
//   - MaxElapsed is counted from the first attempt, not from the call to
//     Do.
//   - No gate and no retry budget: retryablehttp has no hook before a first
//     attempt that could wait or defer, and heed keeps its gates and
//     budgets inside the Transport. So a throttled response does not hold
//     its scope for the client's other requests, published quotas
//     (RateLimit, X-RateLimit-Remaining) are not enforced, and
//     Policy.Budget does not bound retries. Policy.Scope is ignored.
//   - Policy.KeyHeader marks a request that carries it as replay-safe, but
//     the adapter adds no key to POST and PATCH requests that lack one: the
//     first attempt is already on its way before any hook could. Set the
//     header yourself.
//   - heed.WithLogger and heed.WithObserver are not used: the adapter's
//     decisions are neither logged nor observed by heed. The client's own
//     Logger still logs its attempts.
//   - Redirects are followed inside retryablehttp's http.Client; the
//     classifier sees the last hop, replay-safety is judged on the request
//     as the caller made it.
//
// Configure owns CheckRetry, Backoff, ErrorHandler and PrepareRetry;
// replacing one of them afterwards undoes heed's decisions. A PrepareRetry
// set before Configure (to sign requests again, say) is kept and runs after
// the adapter's.
package retryable
