// Limits in more than one dimension: requests, tokens, input and output
// tokens, each with its own remaining count and reset, as Anthropic and
// OpenAI publish them. A dimension that is spent holds the scope until its
// own reset.

package heed

import (
	"net/http"
	"time"
)

// dimension is a remaining count and the field that says when it resets.
type dimension struct {
	remaining, reset string // canonical header keys
	source           string // the reset field, as a wait's source names it
	parse            func(string, time.Time) (time.Duration, bool)
}

// dimensions are the per-dimension limits read: Anthropic's
// anthropic-ratelimit-*-{remaining,reset} (resets as RFC 3339 times), and
// OpenAI's tokens beside its requests (x-ratelimit-*-tokens; resets such as
// "6m0s" or "20ms"), which Azure OpenAI and Groq send alike.
var dimensions = [...]dimension{
	{"Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", "anthropic-ratelimit-requests-reset", parseTimeReset},
	{"Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset", "anthropic-ratelimit-tokens-reset", parseTimeReset},
	{"Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", "anthropic-ratelimit-input-tokens-reset", parseTimeReset},
	{"Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset", "anthropic-ratelimit-output-tokens-reset", parseTimeReset},
	{"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", "x-ratelimit-reset-tokens", parseDurationReset},
}

// spentDimension returns the wait until the latest reset of the dimensions
// h says are spent (remaining 0), and the reset field that gave it; false
// when none is, or a spent one's reset is invalid. Read for a quota,
// markHeader's markQuota admits it only by the field each vendor always sends with
// its dimensions: anthropic-ratelimit-requests-remaining (Anthropic) and
// x-ratelimit-remaining-requests (OpenAI, Azure OpenAI, Groq); it holds
// the scope until its reset (call.done).
func spentDimension(h http.Header, now time.Time) (time.Duration, string, bool) {
	var wait time.Duration
	source, ok := "", false
	for _, d := range dimensions {
		if rem, state := remainingField(h, d.remaining); state != remainingValid || rem != 0 {
			continue
		}
		v, present := singleField(h, d.reset)
		if !present {
			continue
		}
		if r, valid := d.parse(v, now); valid && (!ok || r > wait) {
			wait, source, ok = r, d.source, true
		}
	}
	return wait, source, ok
}

// parseTimeReset parses a reset given as an RFC 3339 time, as Anthropic
// sends it: the wait from now, 0 for a time past.
func parseTimeReset(s string, now time.Time) (time.Duration, bool) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, false
	}
	return until(t, now)
}
