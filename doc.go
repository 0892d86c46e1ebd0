// Package heed is an http.RoundTripper for programs that call rate-limited
// APIs. It retries what is worth retrying, waits exactly as long as the
// server asked and never less, and when that wait cannot fit the caller's
// remaining time it returns a *DeferredError at once, carrying the time the
// work is eligible again.
//
// One request's path through the files, attempt by attempt:
//
//   - gate: admission.go, admit.go, gate.go, infer.go (held, or a quota spent);
//   - limits: known.go, adaptive.go, tokens.go, release.go, concurrency.go,
//     pace.go (a known Limit; the pace and cap learned from throttles);
//   - send: transport.go, wire.go, body.go, key.go (the body's copy, the
//     idempotency key, the hold checked again once the connection is ready);
//   - classification: classify.go, classify_error.go, forbidden.go,
//     awsthrottle.go, bodyhint.go, success.go, peek.go, discard.go;
//   - hints: hint.go, httpdate.go, quota.go, dimensions.go, marks.go,
//     named.go (limits the server names: scopes within the request's);
//   - the deadline: internal/rules/deadline.go, deferred.go (a wait that
//     does not fit the time left returns a *DeferredError at once);
//   - budget.go, log.go, observe.go; routes.go and policy.go pick the
//     Policy; scope.go keeps what a Transport knows of each scope.
package heed
