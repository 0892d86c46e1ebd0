// Package redisgate is a heed.Gate kept in Redis, so that a fleet of
// processes shares what each of them learns about a rate limit: when one
// process is told to wait, every process waits, and a quota that a server
// publishes is spent once by the whole fleet, not once per process.
//
// Give one gate to every Transport of every process:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	client := &http.Client{Transport: heed.New(nil, heed.WithGate(redisgate.New(rdb)))}
//
// # Storage
//
// It needs Redis 4.0 or later (or a server that speaks its Lua scripting:
// Valkey, KeyDB), alone, replicated or in a cluster. Each scope is one
// Redis hash, named the prefix (WithPrefix), then the scope in braces,
// with the scope's braces and percent signs percent-encoded ("{" is %7B,
// "}" %7D, "%" %25): scope "api.openai.com" is
// "heed:gate:{api.openai.com}". So no two pairs of a prefix and a scope
// share a hash (WithPrefix("heed:gate:tenant1:") with scope "openai" is
// "heed:gate:tenant1:{openai}", the default prefix with scope
// "tenant1:openai" is "heed:gate:{tenant1:openai}"), and in a cluster the
// scope is the hash's hash tag unless the prefix has one of its own.
// Earlier versions of redisgate named a hash the prefix followed by the
// scope as it is: gates of both kinds do not share their scopes, and the
// hashes named so are not read, and expire by themselves.
// Every change is one Lua script on the scope's hash alone, so it is
// atomic across the fleet. Times are Unix milliseconds on Redis's clock
// (TIME), which every process reads alike: a gate measures how far its
// process's clock is from it every 30 seconds (the shortest of three TIME
// calls, taken as answered halfway through its round trip; calls made
// while the first measure is under way wait for it), and moves
// every time it writes or reads by that, so a hold of "a second from now"
// ends a second after the throttle for every process, whatever their
// clocks say. The measure's error (half the round trip, and whole
// milliseconds) goes against the hold: ends are written and read that much
// later. A clock within that error of Redis's is taken as right. A
// process's clock that jumps between measures, and a date hint (an
// HTTP-date, a Unix reset), which the process that received it read on its
// own clock, are not corrected (docs/decisions.md). A hold's time is rounded
// up to the next millisecond, so that no wait is shortened. The hash expires, by a relative PEXPIRE, one second
// after the last time it still needs passes: its hold, its quota's reset,
// the lifetime of the sends it counts in flight, and two periods (at
// least two seconds) past the start of the episode the inferred quota
// measures.
//
// Nothing is kept further ahead than Horizon, a week: a hold or a quota's
// reset later than that, whatever a caller passes to Hold or Done, is kept
// until the horizon, and no hash's expiry is longer. (A Transport shares
// holds and resets only as far as heed.WithMaxHold, a day by default.)
// Every script checks every field it reads: a field that is not a whole
// number, or out of its range (a time more than Horizon ahead or before
// 1970, a period longer than Horizon, a count beyond 10^15 either way, or
// below 0 where it cannot be negative), is read as absent and written
// back; a key that is not a hash is replaced;
// and a hash without an expiry, or with one past the horizon, gets one.
// So a hash edited by hand, or by another program, never turns the gate
// off.
//
// # Sends in flight
//
// The quota accounting is heed's own (see heed.QuotaGate): it counts the
// sends admitted and not yet answered. A process that dies mid-request
// never reports its sends answered, so each is counted only for a bounded
// time: WithMaxInFlight, d, one minute by default. A send admitted at t
// stops counting between t+d and t+2d, answered or not. A send that takes
// longer than d may stop counting before it is answered; its quota is then
// counted when its answer arrives, as any answer is.
//
// # Inferred quota
//
// The gate learns the window of a server that publishes no quota, as
// heed.NewGate can (see heed.WithInferredQuota): a scope throttled window
// after window, with the same number of sends served each time and each
// throttle early in its window (its hold lasting at least half the
// period), is then held to that number a window, fleet-wide, which spares
// the fleet the 429s of the sends in flight when a window runs out. It
// counts a send served when the Transport says so (heed.QuotaGate's
// Done), in the episode its process admitted it in, and a throttle at the
// time of the Hold that first held the scope past the episode's reopen.
// WithInferredQuota(false) turns it off; gates sharing a prefix should
// agree on it.
//
// # First contact
//
// A fleet that starts together would meet a limit it does not know with
// every process's herd at once, before any process hears of a refusal.
// So for DefaultContactSpan, 250ms, from the fleet's first send to a scope
// it has sent nothing to for 10 minutes, the gate admits at most
// DefaultContactInFlight, 2, of the scope's sends in flight, counted as
// the quota's are; the others ask again 10ms later (heed waits that at
// debug level, and takes it for no throttle). The first refusal's hold
// then stops the rest. A published quota admits by itself instead. The
// key the scope's hash's name followed by ":contact" holds when the
// contact began, in Unix milliseconds, and expires 10 minutes after the
// scope's last send; a value that is not such a time begins a contact
// then. WithFirstContact sets both figures, or turns it off.
//
// # Pace
//
// The gate is a heed.PaceGate: it keeps, per scope, the state heed paces a
// throttled scope by, so that every process of a fleet paces it as one
// sender (see heed.PaceGate and docs/pacing.md). The state is heed's own
// bytes, kept beside the scope's hash in a hash of two fields, named the
// scope's hash's name followed by ":pace": v, a version every write
// increments, and s, the state. Pace reads it, runs heed's update, and
// writes the result only if the version is still the one it read; else it
// runs the update again on what it has become, up to 16 times, waiting a
// random time that grows a little each try. The hash expires
// 10 minutes after its last write. A key that is not such a hash is
// read as no state, and replaced. A paced send costs two or three Redis
// round trips more (a token, an answer, and a read per recheck of a
// waiting send); a scope never throttled with a hint of a second or more
// costs none. When Redis fails, Pace returns its error and the Transport
// paces on its own copy for a second before it asks again.
//
// The same store keeps, under a scope no request has, what the fleet's
// Transports learned of the limits servers name (GitHub's
// x-ratelimit-resource, Discord's X-RateLimit-Bucket): each shape's name
// and until when each named limit holds, so that a spent search limit
// holds the search calls of every process, one that has never sent a
// search included, and no core call. Each Transport merges with it once
// a second while it sends, and before the send of a shape it has not seen
// answered in a scope whose server names its limits: a read, one round
// trip, and a write, one more, only when it changes (docs/pacing.md,
// "Limits the server names").
//
// # Failing open
//
// Redis is an aid, never a dependency: every Redis call is bounded by
// WithTimeout (50ms by default), and when Redis is down or slow the gate
// answers at once from what this process knows. Beside Redis, it keeps a
// heed.NewGate of its own, to which it writes every hold and every quota
// a response publishes: while Redis fails, Take and NotBefore answer from
// it, without an error, so a hold the process was told still holds and a
// published quota is still counted, from the last figure the process saw
// (each process counts it alone, so a fleet may spend it once per
// process); Hold and Done write to it and return Redis's error, which a
// Transport logs. A hold lives in it until it is over and a quota
// until its reset; it forgets idle scopes.
//
// The gate also gives those holds back to a Redis that may have lost
// them. Every call passes the hold the process knows of its scope, and
// Redis keeps the later of the two. And every hold the process knows that
// is not over is set again, in one pipeline, by the first call that
// succeeds after a call failed, or after Redis lacked one of the gate's
// scripts (it restarted empty, or another server took over), and by the
// first call a second or more after they last were (a Redis that
// restarted while the process was idle says nothing of it to a client
// that reconnects). So a Redis restarted empty gets a scope's hold back
// from any process that knew it: on that process's next call of the
// scope, and otherwise on its first call of any scope a second or more
// after it last set them. A hold deleted from Redis by hand therefore
// comes back until it is over.
//
// The gate logs a warning itself, at most one a second, with the number
// of failures it left out, and an info line when Redis answers again. A
// go-redis client honours the timeout best with ContextTimeoutEnabled set;
// without it, the gate stops waiting at the timeout all the same, and the
// call it left finishes in the background within the client's own
// ReadTimeout.
package redisgate
