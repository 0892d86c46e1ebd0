// The gate's numbers: what heed and its gates must agree on.

package rules

import "time"

// The numbers heed and its gates (the in-memory one and redisgate) must
// agree on. docs/inferred-quota.md and docs/pacing.md give the reasons.
const (
	// QuotaRecheck is how soon a send that a spent quota refused asks
	// again while sends set against that quota are still unanswered, since
	// their answers may give sends back. The rechecks end at the reset.
	QuotaRecheck = 10 * time.Millisecond

	// InferProbe is how often a learned window capacity S is probed: every
	// InferProbe-th predicted window admits one more send than S, and while
	// probes are served, the next window probes again, twice as far.
	InferProbe = 8

	// PaceKeep is how long a gate keeps a scope's pace without a change.
	PaceKeep = 10 * time.Minute
)
