// Package heed is an http.RoundTripper for programs that call rate-limited
// APIs. It retries what is worth retrying, waits exactly as long as the
// server asked and never less, and when that wait cannot fit the caller's
// remaining time it returns a *DeferredError at once, carrying the time the
// work is eligible again.
//
// One request's path through the package, attempt by attempt:
//
//   - The gate (admission.go, admit.go, gate.go, infer.go): the attempt
//     waits while its scope is held, or while the scope's published or inferred quota is
//     spent; else it is counted against that quota and goes on.
//   - The limits (known.go, adaptive.go, tokens.go, release.go,
//     concurrency.go, pace.go): it keeps to the rate and the sends in
//     flight the caller knows of, and to the pace and cap learned from
//     throttles, shared through the gate when it keeps one.
//   - The send (transport.go, wire.go, body.go, key.go): it goes, with its
//     own copy of the body and an idempotency key when it needs one,
//     checked against the scope's hold again once its connection is ready.
//   - Classification (classify.go, classify_error.go, forbidden.go,
//     awsthrottle.go, bodyhint.go, success.go, peek.go): the response or
//     error is delivered, retried, or given up on; a response not delivered
//     is drained and closed (discard.go).
//   - Hints (hint.go, httpdate.go, quota.go, dimensions.go): the response
//     says how long to wait, and what quota its scope has left.
//   - The deadline decision (internal/rules/deadline.go, deferred.go): a wait
//     that fits the caller's remaining time is slept; one that does not
//     returns a *DeferredError at once.
//   - The retry budget (budget.go): retries stay a share of first attempts.
//   - Logging and observing (log.go, observe.go): each decision is logged
//     and given to an observer.
//
// Routes (routes.go) pick each request's Policy (policy.go); scope.go keeps
// what a Transport knows of each scope.
package heed
