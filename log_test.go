package heed_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heed-go/heed"
)

func TestLogOneLinePerDecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		rt := script(tooMany("Retry-After", "2"), boom500, ok200)
		tr := heed.New(rt, heed.WithLogger(log), heed.WithPolicy(exact(heed.Policy{Name: "images"})))
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/img", nil))
		require.NoError(t, err)
		resp.Body.Close()
		entries := logs.All()
		require.Len(t, entries, 3)
		ops := []string{"retry", "retry", "delivered"}
		for i, e := range entries {
			m := e.ContextMap()
			for _, k := range []string{"op", "route", "attempt", "status", "class", "reason", "wait", "left"} {
				assert.Contains(t, m, k, "line %d", i)
			}
			assert.Equal(t, ops[i], m["op"])
			assert.Equal(t, "images", m["route"])
			assert.Equal(t, int64(i+1), m["attempt"])
		}
		first := entries[0].ContextMap()
		assert.Equal(t, int64(429), first["status"])
		assert.Equal(t, "throttled", first["class"])
		assert.Equal(t, 2*time.Second, first["wait"])
		assert.Equal(t, "Retry-After", first["source"])
		assert.Contains(t, first, "retry_at")
		assert.Equal(t, zapcore.InfoLevel, entries[0].Level)
		assert.Equal(t, zapcore.DebugLevel, entries[2].Level)
	})
}

// designLogPaths are RoundTrips that end in each kind of decision.
var designLogPaths = []struct {
	name     string
	method   string
	deadline time.Duration
	hold     time.Duration
	replies  []reply
	ops      []string
}{
	{"deliver", "GET", 0, 0, []reply{ok200}, []string{"delivered"}},
	{"give up", "POST", 0, 0, []reply{boom500}, []string{"give up"}},
	{"defer", "GET", 5 * time.Second, 0, []reply{tooMany("Retry-After", "120")}, []string{"deferred"}},
	{"gate wait then deliver", "GET", 0, 3 * time.Second, []reply{ok200}, []string{"gate wait", "delivered"}},
	{"retry then terminal", "GET", 0, 0, []reply{tooMany("Retry-After", "1"), {status: 401}}, []string{"retry", "delivered"}},
}

func TestDesignLogOneLinePerDecision(t *testing.T) {
	for _, p := range designLogPaths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log, logs := observed()
				gate := heed.NewGate()
				if p.hold > 0 {
					require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(p.hold)))
				}
				ctx := withDeadline(t, t.Context(), p.deadline)
				resp, _ := heed.New(script(p.replies...), heed.WithLogger(log), heed.WithGate(gate), heed.WithPolicy(exact(heed.Policy{}))).
					RoundTrip(newRequest(t, ctx, p.method, "https://api.example/", nil))
				if resp != nil {
					resp.Body.Close()
				}
				var ops []string
				for _, e := range logs.All() {
					ops = append(ops, e.ContextMap()["op"].(string))
				}
				assert.Equal(t, p.ops, ops)
			})
		})
	}
}

func TestDesignLogKeysOnEveryLine(t *testing.T) {
	keys := []string{"op", "route", "attempt", "status", "class", "reason", "wait", "retry_at", "left"}
	for _, p := range designLogPaths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log, logs := observed()
				gate := heed.NewGate()
				if p.hold > 0 {
					require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(p.hold)))
				}
				ctx := withDeadline(t, t.Context(), p.deadline)
				resp, _ := heed.New(script(p.replies...), heed.WithLogger(log), heed.WithGate(gate), heed.WithPolicy(exact(heed.Policy{}))).
					RoundTrip(newRequest(t, ctx, p.method, "https://api.example/", nil))
				if resp != nil {
					resp.Body.Close()
				}
				require.NotEmpty(t, logs.All())
				for _, e := range logs.All() {
					m := e.ContextMap()
					for _, k := range keys {
						assert.Contains(t, m, k, "line %q", m["op"])
					}
				}
			})
		})
	}
}

// TestLogToACoreOfLowLevels logs to a core enabled only below error, as
// the low half of zap's stdout/stderr split is: it hears every line.
func TestLogToACoreOfLowLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.LevelEnablerFunc(func(l zapcore.Level) bool { return l < zapcore.ErrorLevel }))
		rt := script(tooMany("Retry-After", "1"), ok200)
		tr := heed.New(rt, heed.WithLogger(zap.New(core)), heed.WithPolicy(exact(heed.Policy{})))
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		var ops []string
		for _, e := range logs.All() {
			ops = append(ops, e.Message)
		}
		assert.Equal(t, []string{"retry", "delivered"}, ops)
	})
}

// TestSlogNilIsNone: WithSlog(nil) is no logger, as its doc says; a
// RoundTrip under it logs nowhere and does not fail.
func TestSlogNilIsNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(tooMany("Retry-After", "1"), ok200)
		tr := heed.New(rt, heed.WithSlog(nil), heed.WithPolicy(exact(heed.Policy{})))
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Len(t, rt.requests(), 2)
	})
}
