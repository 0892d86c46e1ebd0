// Named scopes: how a scope names a limit within another, as heed and its
// gates agree.

package rules

import "strings"

// NamedSep separates a request scope from a limit named within it. A scope
// that holds it is read by the gates heed knows (its own, redisgate) as:
//
//	R            request scope R, from a sender that knows none of R's
//	             named limits: held by R's hold and quota, and by every
//	             limit named within R while it holds or is spent
//	R NamedSep   R itself, from a sender that knows R's named limits: held
//	             by R's hold and quota alone
//	R NamedSep N the limit N named within R: its hold and quota are its own,
//	             and mark R as held for senders that know no names
//
// Every other byte of N is the limit's own; R has no NamedSep.
const NamedSep = "\x1f"

// SplitScope returns scope's request scope and the limit named within it,
// and whether scope names one ("" for R NamedSep).
func SplitScope(scope string) (request, limit string, named bool) {
	i := strings.IndexByte(scope, NamedSep[0])
	if i < 0 {
		return scope, "", false
	}
	return scope[:i], scope[i+1:], true
}
