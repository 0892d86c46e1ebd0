package heed_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

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
		ops := []string{"retry", "retry", "deliver"}
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
