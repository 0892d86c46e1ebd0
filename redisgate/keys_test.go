package redisgate

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeysDoNotCollide: no two distinct prefix and scope pairs share a
// key, and a default prefix's key has the scope as its hash tag.
func TestKeysDoNotCollide(t *testing.T) {
	s := startRedis(t)
	ctx := t.Context()
	c := s.client(t)
	tenant := New(c, patient, WithPrefix("heed:gate:tenant1:"))
	shared := New(c, patient)
	require.NoError(t, tenant.Hold(ctx, "openai", time.Now().Add(time.Minute)))
	nb, err := shared.NotBefore(ctx, "tenant1:openai")
	require.NoError(t, err)
	assert.True(t, nb.IsZero(), "another prefix's scope is not held")
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"heed:gate:tenant1:{openai}"}, keys)

	// Every pair of short strings over an alphabet of the characters
	// that matter.
	var all []string
	var grow func(s string)
	grow = func(s string) {
		all = append(all, s)
		if len(s) < 3 {
			for _, r := range []string{"a", ":", "{", "}", "%"} {
				grow(s + r)
			}
		}
	}
	grow("")
	seen := make(map[string][2]string)
	for _, prefix := range all {
		g := &gate{prefix: prefix}
		for _, scope := range all {
			k := g.key(scope)
			if was, ok := seen[k]; ok {
				require.Failf(t, "keys collide", "%q, %q and %q, %q are both %q", was[0], was[1], prefix, scope, k)
			}
			seen[k] = [2]string{prefix, scope}
		}
	}

	for _, scope := range []string{"api.example", "a{b}", "}{", "%7B"} {
		k := (&gate{prefix: DefaultPrefix}).key(scope)
		open := strings.IndexByte(k, '{')
		end := strings.IndexByte(k[open+1:], '}')
		require.GreaterOrEqual(t, end, 0, k)
		assert.Equal(t, k, DefaultPrefix+"{"+k[open+1:open+1+end]+"}", "%s: the whole scope is the hash tag", scope)
	}
}
