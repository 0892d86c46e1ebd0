package heed

import (
	"context"
	"sync"
	"time"
)

// Gate holds, per scope, the time before which no request of that scope may
// be sent. Every request of a Transport consults it before each attempt, so
// one throttled response makes the whole scope wait, not just one request.
// Implementations must be safe for concurrent use.
type Gate interface {
	// NotBefore returns the scope's "not before" time; the zero time, or a
	// past one, lets requests through.
	NotBefore(ctx context.Context, scope string) (time.Time, error)
	// Hold sets the scope's "not before" time to until, if that is later
	// than the one it has: it extends, never shortens.
	Hold(ctx context.Context, scope string, until time.Time) error
}

// NewGate returns a Gate kept in memory. Pass one to several Transports with
// WithGate to share it between them.
func NewGate() Gate {
	return &memGate{until: make(map[string]time.Time)}
}

type memGate struct {
	mu    sync.RWMutex
	until map[string]time.Time
}

func (g *memGate) NotBefore(_ context.Context, scope string) (time.Time, error) {
	g.mu.RLock()
	t := g.until[scope]
	g.mu.RUnlock()
	return t, nil
}

func (g *memGate) Hold(_ context.Context, scope string, until time.Time) error {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur, ok := g.until[scope]; ok && !until.After(cur) {
		return nil
	}
	if !until.After(now) {
		return nil
	}
	// Forget scopes whose time has passed, so the map stays as small as
	// the set of scopes currently cooling down.
	if len(g.until) >= 64 {
		for s, t := range g.until {
			if !t.After(now) {
				delete(g.until, s)
			}
		}
	}
	g.until[scope] = until
	return nil
}
