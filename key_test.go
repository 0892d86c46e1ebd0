package heed_test

import (
	"context"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// keysSent runs one piece of work, the requests of steps in order, under a
// context made with WithIdempotencyKey(base), each RoundTrip failing once
// with a 500 before it is served, and returns the key header of each
// request's attempts.
func keysSent(t *testing.T, p heed.Policy, base string, steps [][2]string) [][]string {
	t.Helper()
	var replies []reply
	for range steps {
		replies = append(replies, boom500, ok200)
	}
	rt := script(replies...)
	tr := heed.New(rt, heed.WithPolicy(p))
	ctx := heed.WithIdempotencyKey(t.Context(), base)
	header := p.KeyHeader
	if header == "" {
		header = "Idempotency-Key"
	}
	for _, s := range steps {
		resp, err := tr.RoundTrip(newRequest(t, ctx, s[0], s[1], nil))
		require.NoError(t, err)
		resp.Body.Close()
	}
	sent := rt.requests()
	require.Len(t, sent, 2*len(steps))
	keys := make([][]string, len(steps))
	for i := range steps {
		keys[i] = []string{sent[2*i].header.Get(header), sent[2*i+1].header.Get(header)}
	}
	return keys
}

var uuidV8 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIdempotencyKeyFromTheContext(t *testing.T) {
	steps := [][2]string{
		{"POST", "https://api.example/v1/charges"},
		{"POST", "https://api.example/v1/charges"},
		{"PATCH", "https://api.example/v1/charges"},
		{"POST", "https://api.example/v1/refunds?x=1"},
		{"POST", "https://other.example/v1/charges"},
		{"GET", "https://api.example/v1/charges"},
	}
	for _, p := range []heed.Policy{{}, {KeyHeader: "X-Request-Key"}, {KeyHeader: "idempotency-key"}} {
		t.Run("header="+p.KeyHeader, func(t *testing.T) {
			first := keysSent(t, p, "job-7", steps)
			again := keysSent(t, p, "job-7", steps)
			other := keysSent(t, p, "job-8", steps)
			seen := map[string]int{}
			for i, k := range first {
				if steps[i][0] == "GET" {
					assert.Empty(t, k[0], "a GET gets no key")
					assert.Empty(t, other[i][0])
					continue
				}
				assert.Regexp(t, uuidV8, k[0], "step %d", i)
				assert.Equal(t, k[0], k[1], "step %d: one key on every attempt", i)
				assert.Equal(t, k, again[i], "step %d: the same work again gets the same key", i)
				assert.NotEqual(t, k[0], other[i][0], "step %d: other work, another key", i)
				seen[k[0]]++
			}
			assert.Len(t, seen, 5, "each request of the work has a key of its own")
		})
	}
}

func TestIdempotencyKeyOfTheCallerWins(t *testing.T) {
	tests := []struct {
		name, keyHeader, has, want string
	}{
		{"policy header set", "X-Request-Key", "X-Request-Key", "mine"},
		{"Idempotency-Key set, no policy header", "", "Idempotency-Key", "mine"},
		{"X-Idempotency-Key set, no policy header", "", "X-Idempotency-Key", "mine"},
		{"Idempotency-Key set beside a policy header", "X-Request-Key", "Idempotency-Key", "mine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := script(boom500, ok200)
			tr := heed.New(rt, heed.WithPolicy(heed.Policy{KeyHeader: tt.keyHeader}))
			req := newRequest(t, heed.WithIdempotencyKey(t.Context(), "job"), "POST", "https://api.example/", nil)
			req.Header.Set(tt.has, tt.want)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			for i, s := range rt.requests() {
				assert.Equal(t, tt.want, s.header.Get(tt.has), "attempt %d", i+1)
				if tt.keyHeader != "" && tt.keyHeader != tt.has {
					assert.Empty(t, s.header.Get(tt.keyHeader), "attempt %d: no second key", i+1)
				}
			}
		})
	}
}

func TestIdempotencyKeyNested(t *testing.T) {
	steps := [][2]string{{"POST", "https://api.example/v1/a"}}
	p := heed.Policy{}
	run := func(ctx context.Context) string {
		rt := script(ok200)
		resp, err := heed.New(rt, heed.WithPolicy(p)).RoundTrip(newRequest(t, ctx, steps[0][0], steps[0][1], nil))
		require.NoError(t, err)
		resp.Body.Close()
		return rt.requests()[0].header.Get("Idempotency-Key")
	}
	job := heed.WithIdempotencyKey(t.Context(), "job")
	a := run(heed.WithIdempotencyKey(job, "part-1"))
	b := run(heed.WithIdempotencyKey(job, "part-2"))
	c := run(heed.WithIdempotencyKey(heed.WithIdempotencyKey(t.Context(), "job2"), "part-1"))
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, c, "a nested key derives from the outer one")
	assert.Equal(t, a, run(heed.WithIdempotencyKey(heed.WithIdempotencyKey(t.Context(), "job"), "part-1")))
	assert.Same(t, job, heed.WithIdempotencyKey(job, ""), "an empty key leaves the context as it is")
	assert.Empty(t, run(t.Context()), "no key on the context, no KeyHeader: no key")
}

func TestIdempotencyKeyConcurrentRequests(t *testing.T) {
	const n = 32
	rt := script(ok200)
	tr := heed.New(rt)
	ctx := heed.WithIdempotencyKey(t.Context(), "job")
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := tr.RoundTrip(newRequest(t, ctx, "POST", "https://api.example/v1/a", nil))
			if assert.NoError(t, err) {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	got := map[string]bool{}
	for _, s := range rt.requests() {
		got[s.header.Get("Idempotency-Key")] = true
	}
	assert.Len(t, got, n, "requests at once to one URL each take a place of their own")
	// The same n places, whatever the order they were taken in.
	rt2 := script(ok200)
	tr2 := heed.New(rt2)
	ctx2 := heed.WithIdempotencyKey(t.Context(), "job")
	for range n {
		resp, err := tr2.RoundTrip(newRequest(t, ctx2, "POST", "https://api.example/v1/a", nil))
		require.NoError(t, err)
		resp.Body.Close()
	}
	for _, s := range rt2.requests() {
		assert.True(t, got[s.header.Get("Idempotency-Key")])
	}
}
