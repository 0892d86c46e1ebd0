// Warnings: the gate's log lines, at most one a second.

package redisgate

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// warnEvery is the least time between two lines the gate logs.
const warnEvery = time.Second

// warner logs the gate's Redis failures: a warning with the number of
// failures left out since the last line, and an info line when Redis
// answers again, at most one line every warnEvery.
type warner struct {
	log *zap.Logger

	failing atomic.Bool // the last call failed

	mu     sync.Mutex
	last   time.Time // of the last line
	missed int       // failures not logged since it
}

// failed logs, unless one was logged less than warnEvery ago, that op on
// scope failed with err and the gate answered from what its process
// knows.
func (w *warner) failed(op, scope string, err error) {
	now := time.Now()
	w.failing.Store(true)
	w.mu.Lock()
	if !w.last.IsZero() && now.Sub(w.last) < warnEvery {
		w.missed++
		w.mu.Unlock()
		return
	}
	missed := w.missed
	w.last, w.missed = now, 0
	w.mu.Unlock()
	w.log.Warn("redisgate: Redis failed, answering from what this process knows",
		zap.String("op", op), zap.String("scope", scope), zap.Error(err), zap.Int("failures_not_logged", missed))
}

// ok notes a call that succeeded, and logs it when calls were failing.
func (w *warner) ok() {
	if !w.failing.Load() || !w.failing.CompareAndSwap(true, false) { // Load: no locked op on the usual path
		return
	}
	now := time.Now()
	w.mu.Lock()
	if now.Sub(w.last) < warnEvery {
		w.mu.Unlock()
		return // flapping: the next warning counts what this leaves out
	}
	missed := w.missed
	w.last, w.missed = now, 0
	w.mu.Unlock()
	w.log.Info("redisgate: Redis answers again", zap.Int("failures_not_logged", missed))
}
