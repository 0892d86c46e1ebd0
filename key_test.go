package heed_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// write is one request of a piece of work.
type write struct{ method, url, body string }

// runWork sends writes in order under a context made with
// WithIdempotencyKey(job), each failing once with a 500 before it is
// served, and returns the key each write carried, checking that both its
// attempts carried the same one. It runs in a bubble: the retries wait on
// the fake clock.
func runWork(t *testing.T, p heed.Policy, job string, writes ...write) []string {
	t.Helper()
	var keys []string
	synctest.Test(t, func(t *testing.T) {
		var replies []reply
		for range writes {
			replies = append(replies, boom500, ok200)
		}
		rt := script(replies...)
		tr := heed.New(rt, heed.WithPolicy(p))
		ctx := heed.WithIdempotencyKey(t.Context(), job)
		for _, w := range writes {
			resp, err := tr.RoundTrip(newRequest(t, ctx, w.method, w.url, strings.NewReader(w.body)))
			require.NoError(t, err)
			resp.Body.Close()
		}
		s := rt.requests()
		require.Len(t, s, 2*len(writes), "each write is sent twice: replay-safe")
		for i, w := range writes {
			k := s[2*i].header.Get(p.KeyHeader)
			assert.Equal(t, k, s[2*i+1].header.Get(p.KeyHeader), "%v: one key on every attempt", w)
			assert.Equal(t, w.body, string(s[2*i+1].body))
			keys = append(keys, k)
		}
	})
	return keys
}

var uuidV8 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIdempotencyKeyFromTheContext(t *testing.T) {
	writes := []write{
		{"POST", "https://api.example/v1/charges", "item=A"},
		{"POST", "https://api.example/v1/charges", "item=B"},
		{"PATCH", "https://api.example/v1/charges", "item=A"},
		{"POST", "https://api.example/v1/refunds?x=1", "item=A"},
		{"POST", "https://api.example/v1/refunds?x=2", "item=A"},
		{"POST", "https://other.example/v1/charges", "item=A"},
		{"POST", "https://api.example/v1/charges", ""},
	}
	for _, header := range []string{"Idempotency-Key", "X-Request-Key"} {
		t.Run(header, func(t *testing.T) {
			p := heed.Policy{KeyHeader: header}
			first := runWork(t, p, "job-7", writes...)
			again := runWork(t, p, "job-7", writes...)
			other := runWork(t, p, "job-8", writes...)
			assert.Equal(t, first, again, "the same work again sends the same keys")
			seen := map[string]bool{}
			for i, k := range first {
				assert.Regexp(t, uuidV8, k, "write %d", i)
				assert.NotEqual(t, k, other[i], "write %d: other work, other keys", i)
				seen[k] = true
			}
			assert.Len(t, seen, len(writes), "no two writes share a key")
		})
	}
}

// TestIdempotencyKeyFollowsTheWrite shows that a write's key depends on
// the write, not on its place in the work: a run that skips the writes done
// before, or sends them in another order, sends each with its key.
func TestIdempotencyKeyFollowsTheWrite(t *testing.T) {
	p := heed.Policy{KeyHeader: "Idempotency-Key"}
	a := write{"POST", "https://api.example/v1/charges", "item=A"}
	b := write{"POST", "https://api.example/v1/charges", "item=B"}
	c := write{"POST", "https://api.example/v1/charges", "item=C"}
	first := runWork(t, p, "job", a, b, c)
	tests := []struct {
		name   string
		writes []write
		want   []string
	}{
		{"checkpointed: A done, B and C again", []write{b, c}, first[1:]},
		{"checkpointed: only C", []write{c}, first[2:]},
		{"reordered", []write{c, a, b}, []string{first[2], first[0], first[1]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, runWork(t, p, "job", tt.writes...))
		})
	}
	t.Run("the same write twice in one run", func(t *testing.T) {
		twice := runWork(t, p, "job", a, a)
		assert.Equal(t, first[0], twice[0], "the first is the write of the first run")
		assert.NotEqual(t, twice[0], twice[1], "the second is a write of its own")
		assert.Equal(t, twice, runWork(t, p, "job", a, a))
	})
}

func TestIdempotencyKeyNeedsAKeyHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := script(boom500, ok200)
		ctx := heed.WithIdempotencyKey(t.Context(), "job")
		resp, err := heed.New(rt).RoundTrip(newRequest(t, ctx, "POST", "https://api.example/v1/a", strings.NewReader("x")))
		require.NoError(t, err)
		resp.Body.Close()
		s := rt.requests()
		require.Len(t, s, 1, "an unkeyed POST is not resent: a key on the context alone makes none")
		assert.Empty(t, s[0].header.Get("Idempotency-Key"))
		assert.Equal(t, 500, resp.StatusCode)
	})
}

func TestIdempotencyKeyOfTheCallerWins(t *testing.T) {
	tests := []struct {
		name, keyHeader, has string
	}{
		{"policy header set", "X-Request-Key", "X-Request-Key"},
		{"Idempotency-Key set beside a policy header", "X-Request-Key", "Idempotency-Key"},
		{"X-Idempotency-Key set beside a policy header", "Idempotency-Key", "X-Idempotency-Key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(boom500, ok200)
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{KeyHeader: tt.keyHeader}))
				req := newRequest(t, heed.WithIdempotencyKey(t.Context(), "job"), "POST", "https://api.example/", nil)
				req.Header.Set(tt.has, "mine")
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				s := rt.requests()
				require.Len(t, s, 2)
				for i, r := range s {
					assert.Equal(t, "mine", r.header.Get(tt.has), "attempt %d", i+1)
					if tt.keyHeader != tt.has {
						assert.Empty(t, r.header.Get(tt.keyHeader), "attempt %d: no second key", i+1)
					}
				}
			})
		})
	}
}

// TestIdempotencyKeyOfEveryBody derives a key from each kind of body heed
// can read again, and gives a random one to a body it cannot.
func TestIdempotencyKeyOfEveryBody(t *testing.T) {
	file := filepath.Join(t.TempDir(), "upload")
	require.NoError(t, os.WriteFile(file, []byte("file body"), 0o600))
	tests := []struct {
		name    string
		body    func(t *testing.T) (io.Reader, bool) // the body, and whether to drop GetBody
		opts    []heed.Option
		derived bool
	}{
		{"GetBody", func(*testing.T) (io.Reader, bool) { return strings.NewReader("a body"), false }, nil, true},
		{"buffered", func(*testing.T) (io.Reader, bool) { return io.NopCloser(strings.NewReader("a body")), true }, nil, true},
		{"file, read in place", func(t *testing.T) (io.Reader, bool) {
			f, err := os.Open(file)
			require.NoError(t, err)
			return f, true
		}, nil, true},
		{"no body", func(*testing.T) (io.Reader, bool) { return nil, false }, nil, true},
		{"past the buffer bound", func(*testing.T) (io.Reader, bool) { return io.NopCloser(strings.NewReader("a long body")), true }, []heed.Option{heed.WithBodyBuffer(4)}, false},
		{"one attempt, no GetBody", func(*testing.T) (io.Reader, bool) { return io.NopCloser(strings.NewReader("a body")), true },
			[]heed.Option{heed.WithPolicy(heed.Policy{KeyHeader: "Idempotency-Key", MaxAttempts: 1})}, false},
		{"one attempt, GetBody", func(*testing.T) (io.Reader, bool) { return strings.NewReader("a body"), false },
			[]heed.Option{heed.WithPolicy(heed.Policy{KeyHeader: "Idempotency-Key", MaxAttempts: 1})}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send := func() string {
				rt := script(ok200)
				opts := append([]heed.Option{heed.WithPolicy(heed.Policy{KeyHeader: "Idempotency-Key"})}, tt.opts...)
				body, dropGetBody := tt.body(t)
				req := newRequest(t, heed.WithIdempotencyKey(t.Context(), "job"), "POST", "https://api.example/v1/up", body)
				if dropGetBody {
					req.GetBody = nil
				}
				resp, err := heed.New(rt, opts...).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				k := rt.requests()[0].header.Get("Idempotency-Key")
				require.Len(t, k, 36)
				return k
			}
			first, again := send(), send()
			if tt.derived {
				assert.Regexp(t, uuidV8, first)
				assert.Equal(t, first, again, "derived from the work and the body")
			} else {
				assert.NotEqual(t, first, again, "a body heed cannot read again gets a random key")
			}
		})
	}
}

func TestIdempotencyKeyNested(t *testing.T) {
	p := heed.Policy{KeyHeader: "Idempotency-Key"}
	run := func(ctx context.Context) string {
		rt := script(ok200)
		resp, err := heed.New(rt, heed.WithPolicy(p)).RoundTrip(newRequest(t, ctx, "POST", "https://api.example/v1/a", strings.NewReader("x")))
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
}

// TestIdempotencyKeyConcurrentWrites sends writes at once under one
// context: each gets the key it gets when they are sent one by one.
func TestIdempotencyKeyConcurrentWrites(t *testing.T) {
	const n = 32
	p := heed.Policy{KeyHeader: "Idempotency-Key"}
	body := func(i int) string { return "item=" + strings.Repeat("x", i) }
	keys := func(concurrent bool) map[string]string {
		rt := script(ok200)
		tr := heed.New(rt, heed.WithPolicy(p))
		ctx := heed.WithIdempotencyKey(t.Context(), "job")
		var wg sync.WaitGroup
		for i := range n {
			send := func() {
				resp, err := tr.RoundTrip(newRequest(t, ctx, "POST", "https://api.example/v1/a", strings.NewReader(body(i))))
				if assert.NoError(t, err) {
					resp.Body.Close()
				}
			}
			if concurrent {
				wg.Go(send)
			} else {
				send()
			}
		}
		wg.Wait()
		got := map[string]string{}
		for _, s := range rt.requests() {
			got[string(s.body)] = s.header.Get("Idempotency-Key")
		}
		require.Len(t, got, n)
		return got
	}
	one, many := keys(false), keys(true)
	assert.Equal(t, one, many)
	distinct := map[string]bool{}
	for _, k := range many {
		distinct[k] = true
	}
	assert.Len(t, distinct, n)
}
