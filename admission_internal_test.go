package heed

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
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

// shortGate is a QuotaGate of another kind that refuses a scope's first
// refusals takes a few milliseconds ahead, and answers hold, until then,
// from NotBefore: a first contact's recheck without it, another process's
// short hold with it.
type shortGate struct {
	QuotaGate
	mu       sync.Mutex
	refusals int
	hold     time.Time
	held     bool
}

func (g *shortGate) Take(ctx context.Context, scope string) (time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refusals == 0 {
		return g.QuotaGate.Take(ctx, scope)
	}
	g.refusals--
	g.hold = time.Now().Add(5 * time.Millisecond)
	return g.hold, nil
}

func (g *shortGate) NotBefore(ctx context.Context, scope string) (time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		return g.hold, nil
	}
	return time.Time{}, nil
}

// TestARecheckIsNoThrottle: a short refusal from another kind of
// QuotaGate whose NotBefore then shows no hold (redisgate's first contact)
// is waited at debug level and tells no throttle; one whose NotBefore
// shows the hold is a hold found elsewhere: logged at info, a throttle the
// wire check then covers.
func TestARecheckIsNoThrottle(t *testing.T) {
	tests := []struct {
		name      string
		held      bool
		refusals  int
		level     zapcore.Level
		throttled bool
	}{
		{"a recheck", false, 1, zapcore.DebugLevel, false},
		{"three rechecks", false, 3, zapcore.DebugLevel, false},
		{"a short hold", true, 1, zapcore.InfoLevel, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &shortGate{QuotaGate: NewGate().(QuotaGate), refusals: tt.refusals, held: tt.held}
			core, logs := observer.New(zapcore.DebugLevel)
			logger := zap.New(core)
			inner := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
			})
			tr := New(inner, WithGate(g), WithLogger(logger))
			req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/x", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			waits := logs.FilterMessage("gate wait").All()
			require.Len(t, waits, tt.refusals)
			for _, w := range waits {
				assert.Equal(t, tt.level, w.Level)
			}
			tr.scopesMu.RLock()
			defer tr.scopesMu.RUnlock()
			require.Len(t, tr.scopes, 1)
			for _, sl := range tr.scopes {
				assert.Equal(t, tt.throttled, sl.throttledAt.Load() != 0, "a throttle told")
			}
		})
	}
}
