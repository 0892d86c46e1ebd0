package heed_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
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

func TestLogsAndErrorsHoldNoSecrets(t *testing.T) {
	secrets := []string{"hunter2", "Bearer sk-live-123", "session=abc", "key-999", "SIGVALUE", "apikeyvalue", "sigvalue", "pw0rd", "frag-secret"}
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		rt := script(reply{err: fmt.Errorf("wrapped: %w", resetErr)}, tooMany("Retry-After", "600"))
		tr := heed.New(rt, heed.WithLogger(log))
		req := newRequest(t, ctx, "GET", "https://user:pw0rd@api.example/v1/x?X-Amz-Signature=SIGVALUE&sig=sigvalue&api_key=apikeyvalue#frag-secret", strings.NewReader("hunter2"))
		req.Header.Set("Authorization", "Bearer sk-live-123")
		req.Header.Set("Cookie", "session=abc")
		req.Header.Set("X-Api-Key", "key-999")
		_, err := (&http.Client{Transport: tr}).Do(req)
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		texts := []string{de.Error(), de.URL, de.Method, de.Reason, de.Route, de.Key}
		for _, e := range logs.All() {
			texts = append(texts, e.Message)
			for k, v := range e.ContextMap() {
				texts = append(texts, k+"="+fmt.Sprint(v))
			}
		}
		require.Greater(t, len(texts), 10)
		for _, s := range texts {
			for _, secret := range secrets {
				assert.NotContains(t, s, secret)
			}
		}
		assert.Equal(t, "https://api.example/v1/x", de.URL)
	})
}
