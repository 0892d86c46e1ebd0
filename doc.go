// Package heed is an http.RoundTripper for programs that call rate-limited
// APIs. It retries what is worth retrying, waits exactly as long as the
// server asked and never less, and when that wait cannot fit the caller's
// remaining time it returns a *DeferredError at once, carrying the time the
// work is eligible again.
//
// One request's path through the files, attempt by attempt:
//
//   - gate: admission.go, admit.go, gate.go, bypass.go, infer.go (held, or a quota spent);
//   - limits: known.go, adaptive.go, tokens.go, release.go, concurrency.go,
//     pace.go (a known Limit; the pace and cap learned from throttles);
//   - send: transport.go, wire.go, body.go, key.go (the body's copy, the
//     idempotency key, the hold checked again once the connection is ready);
//   - classification: classify.go, classify_error.go, forbidden.go,
//     awsthrottle.go, bodyhint.go, success.go, peek.go, discard.go;
//   - hints: hint.go, httpdate.go, quota.go, dimensions.go, marks.go,
//     room.go (a bucket's fill), named.go (limits a server names, kept
//     apart in the gate), fleetnames.go (what Transports sharing a gate
//     learned of them, kept in it);
//   - the deadline: internal/rules/deadline.go, deferred.go (a wait that
//     does not fit the time left returns a *DeferredError at once);
//   - budget.go, log.go, observe.go; routes.go and policy.go pick the
//     Policy; scope.go keeps what a Transport knows of each scope.
//
// What heed reads, by vendor (docs/classification.md has every rule):
// Retry-After, retry-after-ms and x-ms-retry-after-ms (Azure, OpenAI); the
// IETF RateLimit fields; X-RateLimit-Remaining and -Reset (GitHub, many),
// Discord's -Reset-After, x-rate-limit-* (X, Zendesk); the dimensions of
// anthropic-ratelimit-* and x-ratelimit-*-tokens (OpenAI, Azure OpenAI,
// Groq); the limit a server names (GitHub's x-ratelimit-resource,
// Discord's X-RateLimit-Bucket, -Scope and -Global); Stripe-Should-Retry,
// x-should-retry, Age; Shopify REST's X-Shopify-Shop-Api-Call-Limit, as
// room for the pace. In a refusal's body: Google's RetryInfo, QuotaFailure
// and ErrorInfo (Gemini, Vertex AI), Discord's retry_after, OpenAI's
// insufficient_quota, a problem+json quota-exceeded, GitHub's secondary
// limit, Salesforce's REQUEST_LIMIT_EXCEEDED, AWS's throttling codes; in a
// 2xx, with Policy.PeekSuccess, a GraphQL throttle (Shopify, GitHub) or a
// stream opening with an error (Anthropic, OpenAI). Knowingly not read, for
// want of a time to wait for: Sforce-Limit-Info, x-ms-ratelimit-remaining-*.
package heed
