// Package jobpoll follows a long-running job until it reaches a terminal
// state: a media render, a report run, a bulk import, a cloud operation.
//
// A Poller knows the job's states: the terminal ones (required) and,
// optionally, the running ones. Each check of the job goes through a
// Checker; HTTPChecker reads the state from a field of a JSON status
// response, so that most vendors need no code:
//
//	p := &jobpoll.Poller{Terminal: []string{"succeeded", "failed"}, Deadline: 10 * time.Minute}
//	st, err := p.Poll(ctx, id, &jobpoll.HTTPChecker{URL: statusURL, Field: "status"})
//
// Between checks the Poller waits exactly as long as the status response
// asked (Retry-After and the other hints of heed.Hint), never less and at
// least Poller.MinWait; without a hint it backs off with equal jitter. The
// job's deadline is checked before each wait, never after: when the next
// check would come too late, Poll returns a *TimeoutError at once, carrying
// the time the job may be checked again.
//
// Failures of a check itself are the business of the check's own heed
// Transport, with a time limit of its own: a 5xx from the status endpoint says
// nothing about the job. When that Transport defers, Poll returns a
// *CheckError that wraps the *heed.DeferredError. RetryAt reads the time to
// come back from either error.
package jobpoll
