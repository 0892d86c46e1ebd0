// Scopes in process: what a Transport keeps of each scope it has sent to,
// beside what its gate keeps.

package heed

import "sync/atomic"

// scopeLocal is what a Transport keeps of one scope in process: its
// adaptive rate limiter and the retry budget of each policy used in it.
type scopeLocal struct {
	limiter adaptive
	budgets map[*policy]*retryBudget
	known   map[*policy]*known // the Limit of each policy that has one
	waiting atomic.Int64       // RoundTrips waiting to send

	// The latest hold this Transport set, and when it was set, in Unix
	// nanoseconds: what the wire check checks against.
	heldUntil   atomic.Int64
	throttledAt atomic.Int64
	// published: a response of the scope published a quota, whose reset
	// the gate may answer as a wait
	published atomic.Bool
}

// scope returns the in-process state of scope, p's retry budget in it
// (nil when p has none) and p's known limit in it (nil when p has none).
func (t *Transport) scope(p *policy, scope string) (*scopeLocal, *retryBudget, *known) {
	t.scopesMu.Lock()
	defer t.scopesMu.Unlock()
	sl := t.scopes[scope]
	if sl == nil {
		sl = &scopeLocal{budgets: make(map[*policy]*retryBudget, 1)}
		if t.paces != nil {
			sl.limiter.shared = &sharedPace{gate: t.paces, scope: scope}
		}
		t.scopes[scope] = sl
	}
	var k *known
	if p.limit != (Limit{}) {
		if k = sl.known[p]; k == nil {
			if sl.known == nil {
				sl.known = make(map[*policy]*known, 1)
			}
			k = newKnown(p.limit)
			sl.known[p] = k
		}
	}
	if p.budget.Disabled {
		return sl, nil, k
	}
	b := sl.budgets[p]
	if b == nil {
		b = newRetryBudget(p.budget)
		sl.budgets[p] = b
	}
	return sl, b, k
}
