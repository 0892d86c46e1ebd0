package heed

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// plainGate is a Gate and nothing more.
type plainGate struct{ Gate }

// otherQuotaGate is a QuotaGate not heed's own, as redisgate's.
type otherQuotaGate struct{ QuotaGate }

// TestOnlyAnotherQuotaGateAsksForRechecks: a short refusal whose gate then
// answers no hold and no reset is a recheck (redisgate's first contact)
// only from a QuotaGate of another kind. heed's own gate refuses so for a
// window it inferred, and a plain Gate's hold is not in the reset its
// admission answers: theirs are holds, told as throttles elsewhere.
func TestOnlyAnotherQuotaGateAsksForRechecks(t *testing.T) {
	tests := []struct {
		name string
		gate Gate
		want bool
	}{
		{"heed's own", NewGate(), false},
		{"heed's own, inferring", NewGate(WithInferredQuota(true)), false},
		{"a plain Gate", plainGate{NewGate()}, false},
		{"another QuotaGate", otherQuotaGate{NewGate().(QuotaGate)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, newAdmission(tt.gate).rechecks())
		})
	}
	// A plain Gate's hold of a few milliseconds, another process's: its
	// admission's reset does not know it.
	g := plainGate{NewGate()}
	a := newAdmission(g)
	now := time.Now()
	assert.NoError(t, g.Hold(context.Background(), "s", now.Add(5*time.Millisecond)))
	nb, _, _, err := a.take(context.Background(), "s", now)
	assert.NoError(t, err)
	assert.True(t, nb.After(now), "refused for the hold")
	assert.False(t, a.reset(context.Background(), "s").After(now), "which the reset does not show")
}
