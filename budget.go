// The retry budget: retries per scope as a share of first attempts.

package heed

import (
	"sync"
	"sync/atomic"
	"time"
)

// Budget bounds a scope's retries to a share of its first attempts, as
// gRPC's retry throttling does: within any Window, Ratio × first attempts
// + MinPerSecond × Window retries. First attempts are never refused; a
// refused retry delivers the last response or error at once (reason
// "retry budget"). Its zero fields mean their defaults.
type Budget struct {
	Ratio        float64       // retries per first attempt; 0: 0.2; negative: none
	MinPerSecond int           // retries a second of Window whatever the traffic; 0: 10; negative: none
	Window       time.Duration // how long attempts count; 0: 10s
	Disabled     bool          // no budget: every retry the policy allows is made
}

// The defaults for the zero fields of a Budget.
const (
	budgetRatio        = 0.2
	budgetMinPerSecond = 10
	budgetWindow       = 10 * time.Second
)

// budgetSlots is the number of time slots a window is counted in.
const budgetSlots = 10

// retryBudget is the state of one scope's Budget.
type retryBudget struct {
	ratio   float64
	reserve float64 // MinPerSecond × Window
	slot    time.Duration

	// First attempts count without the lock into the newest slot; the
	// lock moves the ring, and counts retries.
	mu      sync.Mutex
	start   atomic.Int64 // index of the newest slot
	firsts  [budgetSlots]atomic.Int64
	retries [budgetSlots]int64
}

func newRetryBudget(b Budget) *retryBudget {
	if b.Disabled {
		return nil
	}
	ratio := b.Ratio
	switch {
	case ratio == 0:
		ratio = budgetRatio
	case ratio < 0:
		ratio = 0
	}
	perSec := b.MinPerSecond
	switch {
	case perSec == 0:
		perSec = budgetMinPerSecond
	case perSec < 0:
		perSec = 0
	}
	window := b.Window
	if window <= 0 {
		window = budgetWindow
	}
	slot := max(window/budgetSlots, time.Nanosecond)
	return &retryBudget{ratio: ratio, reserve: float64(perSec) * window.Seconds(), slot: slot}
}

// reset forgets every attempt counted: every slot is emptied, and the
// ring starts afresh at the next attempt (advance). Nothing else uses the
// budget meanwhile (scopeLocal.reset), so it is cleared as memory, not
// slot by slot.
func (b *retryBudget) reset() {
	b.firsts = [budgetSlots]atomic.Int64{}
	b.retries = [budgetSlots]int64{}
	b.start.Store(0)
}

// window is how long the budget counts attempts.
func (b *retryBudget) window() time.Duration { return b.slot * budgetSlots }

// advance moves the ring to now, clearing slots that fell out of the
// window. The caller holds the lock.
func (b *retryBudget) advance(now int64) int {
	idx := now / int64(b.slot)
	start := b.start.Load()
	if start == 0 {
		// A budget new or reset: every slot is empty already. (A mono
		// count is near 2^62, so no slot index is 0.)
		b.start.Store(idx)
		return slotOf(idx)
	}
	if gap := idx - start; gap > 0 {
		for i := int64(1); i <= min(gap, budgetSlots); i++ {
			j := (start + i) % budgetSlots
			b.firsts[j].Store(0)
			b.retries[j] = 0
		}
		start = idx
		b.start.Store(idx)
	}
	return slotOf(start)
}

// slotOf is the ring's slot for the time slot index idx.
func slotOf(idx int64) int { return int(((idx % budgetSlots) + budgetSlots) % budgetSlots) }

// first records a first attempt at now, a mono count: without the lock,
// unless it is the first of a slot.
func (b *retryBudget) first(now int64) {
	if b == nil {
		return
	}
	if idx := now / int64(b.slot); idx == b.start.Load() {
		b.firsts[slotOf(idx)].Add(1)
		return
	}
	b.mu.Lock()
	b.firsts[b.advance(now)].Add(1)
	b.mu.Unlock()
}

// retry reports whether a retry may be made, and records it if so.
func (b *retryBudget) retry(now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.advance(mono(now))
	var firsts, retries int64
	for j := range budgetSlots {
		firsts += b.firsts[j].Load()
		retries += b.retries[j]
	}
	if b.ratio*float64(firsts)+b.reserve-float64(retries) < 1 {
		return false
	}
	b.retries[i]++
	return true
}
