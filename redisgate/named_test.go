package redisgate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// TestNamedLimitsMarkTheirScope: a limit named within a request scope
// (rules.NamedSep) holds, while it holds or is spent, the request scope's
// sends from a Transport that knows none of its names, and no others; the
// same in heed's own gate and in redisgate, at several lengths.
func TestNamedLimitsMarkTheirScope(t *testing.T) {
	s := startRedis(t)
	const (
		request = "api.test"
		search  = request + rules.NamedSep + "resource search"
		core    = request + rules.NamedSep + "resource core"
		knowing = request + rules.NamedSep
	)
	type want struct {
		ignorant, knowing, search, core time.Duration // Take's wait; 0: admitted
	}
	cases := []struct {
		name string
		set  func(ctx context.Context, g heed.QuotaGate, now time.Time, d time.Duration)
		want func(d time.Duration) want
	}{
		{"a named limit's hold", func(ctx context.Context, g heed.QuotaGate, now time.Time, d time.Duration) {
			require.NoError(t, g.Hold(ctx, search, now.Add(d)))
		}, func(d time.Duration) want { return want{ignorant: d, search: d} }},
		{"a named limit's spent quota", func(ctx context.Context, g heed.QuotaGate, now time.Time, d time.Duration) {
			at, err := g.Take(ctx, search)
			require.NoError(t, err)
			require.True(t, at.IsZero())
			require.NoError(t, g.Done(ctx, search, &heed.Quota{Remaining: 0, Reset: now.Add(d)}, true))
		}, func(d time.Duration) want { return want{ignorant: d, search: d} }},
		{"a named limit's quota not spent", func(ctx context.Context, g heed.QuotaGate, now time.Time, d time.Duration) {
			at, err := g.Take(ctx, search)
			require.NoError(t, err)
			require.True(t, at.IsZero())
			require.NoError(t, g.Done(ctx, search, &heed.Quota{Remaining: 5, Reset: now.Add(d)}, true))
		}, func(time.Duration) want { return want{} }},
		{"marks extend, never shorten", func(ctx context.Context, g heed.QuotaGate, now time.Time, d time.Duration) {
			require.NoError(t, g.Hold(ctx, search, now.Add(2*d)))
			require.NoError(t, g.Hold(ctx, core, now.Add(d)))
		}, func(d time.Duration) want { return want{ignorant: 2 * d, search: 2 * d, core: d} }},
		{"the request scope's own hold", func(ctx context.Context, g heed.QuotaGate, now time.Time, d time.Duration) {
			require.NoError(t, g.Hold(ctx, request, now.Add(d)))
		}, func(d time.Duration) want { return want{ignorant: d, knowing: d} }},
	}
	gates := []struct {
		name string
		make func(prefix string) heed.QuotaGate
	}{
		{"heed's own", func(string) heed.QuotaGate { return heed.NewGate().(heed.QuotaGate) }},
		{"redisgate", func(prefix string) heed.QuotaGate { return newGate(t, s, WithPrefix(prefix)) }},
	}
	for _, gt := range gates {
		for _, tc := range cases {
			for _, d := range []time.Duration{time.Second, 5 * time.Second, time.Minute} {
				name := gt.name + "/" + tc.name + "/" + d.String()
				t.Run(name, func(t *testing.T) {
					ctx := t.Context()
					g := gt.make(name + ":")
					now := time.Now()
					tc.set(ctx, g, now, d)
					w := tc.want(d)
					for _, c := range []struct {
						scope string
						wait  time.Duration
					}{{request, w.ignorant}, {knowing, w.knowing}, {search, w.search}, {core, w.core}} {
						at, err := g.Take(ctx, c.scope)
						require.NoError(t, err)
						if c.wait == 0 {
							assert.True(t, at.IsZero(), "%q admitted, not held until %v", c.scope, at.Sub(now))
							require.NoError(t, g.Done(ctx, c.scope, nil, true))
							continue
						}
						// Never shorter; redisgate rounds up to the
						// millisecond.
						assert.False(t, at.Before(now.Add(c.wait)), "%q held %v, want %v", c.scope, at.Sub(now), c.wait)
						assert.Less(t, at.Sub(now), c.wait+time.Second, "%q held %v, want %v", c.scope, at.Sub(now), c.wait)
					}
					nb, err := g.NotBefore(ctx, request)
					require.NoError(t, err)
					if w.knowing == 0 {
						assert.True(t, nb.IsZero() || !nb.After(time.Now()), "NotBefore reads no named limit's mark: %v", nb.Sub(now))
					}
				})
			}
		}
	}
}

// TestNamedKeysShareASlot: a named limit's hash, its request scope's hash
// and marks, and the names kept of it have one hash tag, the request
// scope: a script that reads two finds them on one Redis Cluster node.
func TestNamedKeysShareASlot(t *testing.T) {
	g := &gate{prefix: "p:"}
	for _, request := range []string{"api.github.com", "a{b}c", "tenant 7"} {
		tag := "{" + keyEscaper.Replace(request) + "}"
		for _, k := range []string{
			g.key(request),
			g.key(request + rules.NamedSep),
			g.key(request + rules.NamedSep + "bucket abcd" + rules.NamedSep + "channels/1"),
			g.marksKey(request),
			g.paceKey(request + rules.NamedSep + "names"),
		} {
			assert.True(t, strings.HasPrefix(k, "p:"+tag), "%q has %q as its hash tag", k, tag)
		}
		assert.Equal(t, g.key(request), g.key(request+rules.NamedSep), "a knowing sender's take is the request scope's")
		assert.NotEqual(t, g.key(request), g.key(request+rules.NamedSep+"resource core"))
		assert.NotEqual(t, g.marksKey(request), g.key(request+rules.NamedSep+":named"))
	}
}

// namedAPI is a loopback API whose limits are named as GitHub and Discord
// name them: GitHub's search resource is spent for spent after its first
// call, core is not; Discord's messages bucket is refused, for spent, on
// channel 1 alone. It counts the requests to each path.
func namedAPI(t *testing.T, spent time.Duration) (*httptest.Server, *sync.Map) {
	var hits sync.Map
	var mu sync.Mutex
	var searchReset time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		mu.Lock()
		defer mu.Unlock()
		h := w.Header()
		switch {
		case strings.HasPrefix(r.URL.Path, "/search/"):
			// docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
			if searchReset.IsZero() {
				searchReset = time.Now().Add(spent)
				h.Set("X-Ratelimit-Remaining", "0")
			} else {
				h.Set("X-Ratelimit-Remaining", "0")
				w.WriteHeader(http.StatusForbidden)
			}
			h.Set("X-Ratelimit-Resource", "search")
			h.Set("X-Ratelimit-Limit", "30")
			h.Set("X-Ratelimit-Reset", strconv.FormatInt(searchReset.Add(time.Second-1).Unix(), 10))
		case strings.HasPrefix(r.URL.Path, "/api/v10/channels/"):
			// discord.com/developers/docs/topics/rate-limits
			h.Set("X-Ratelimit-Bucket", "abcd1234")
			h.Set("X-Ratelimit-Limit", "5")
			if strings.HasPrefix(r.URL.Path, "/api/v10/channels/1/") {
				h.Set("X-Ratelimit-Remaining", "0")
				h.Set("X-Ratelimit-Reset-After", strconv.FormatFloat(spent.Seconds(), 'f', 3, 64))
				h.Set("Retry-After", strconv.Itoa(int(spent/time.Second)))
				h.Set("X-Ratelimit-Scope", "user")
				w.WriteHeader(http.StatusTooManyRequests)
			} else {
				h.Set("X-Ratelimit-Remaining", "4")
				h.Set("X-Ratelimit-Reset-After", "1.000")
			}
		default:
			h.Set("X-Ratelimit-Resource", "core")
			h.Set("X-Ratelimit-Limit", "5000")
			h.Set("X-Ratelimit-Remaining", "4999")
			h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestFleetKeepsNamedLimitsApart: processes sharing a gate learn the
// limits a server names from each other. Once one has found GitHub's
// search limit spent, or a Discord bucket refused on one channel, another
// that never called the server sends core calls, and another channel's
// messages, at once, and does not send into the limit that holds, whether
// its first call is of that limit or not. With the whole scope held, as
// before the gate kept names, the core calls and the other channel would
// wait out the spent limit.
func TestFleetKeepsNamedLimitsApart(t *testing.T) {
	s := startRedis(t)
	type step struct {
		process    int // 0 learns first; 1 and 2 never called before
		method     string
		path       string
		sent, held bool // held: a *DeferredError whose RetryAt is no sooner than the limit's end
	}
	github := []step{
		{0, "GET", "/search/issues", true, false},
		{1, "GET", "/user", true, false},
		{1, "GET", "/search/code", false, true},
		{1, "GET", "/repos/o/r", true, false},
		{2, "GET", "/search/issues", false, true},
		{2, "GET", "/repos/o/r/pulls", true, false},
	}
	discord := []step{
		{0, "POST", "/api/v10/channels/1/messages", true, false},
		{1, "POST", "/api/v10/channels/2/messages", true, false},
		{1, "POST", "/api/v10/channels/1/messages", false, true},
		{2, "POST", "/api/v10/channels/1/messages", false, true},
		{2, "POST", "/api/v10/channels/3/messages", true, false},
	}
	gates := []struct {
		name string
		make func(t *testing.T, prefix string) func() heed.Gate
	}{
		{"one heed.NewGate", func(*testing.T, string) func() heed.Gate {
			g := heed.NewGate()
			return func() heed.Gate { return g }
		}},
		{"redisgate", func(t *testing.T, prefix string) func() heed.Gate {
			return func() heed.Gate { return New(s.client(t), patient, WithPrefix(prefix)) }
		}},
	}
	for _, gt := range gates {
		for _, api := range []struct {
			name  string
			steps []step
		}{{"GitHub", github}, {"Discord", discord}} {
			for _, spent := range []time.Duration{2 * time.Second, 30 * time.Second} {
				name := gt.name + "/" + api.name + "/" + spent.String()
				t.Run(name, func(t *testing.T) {
					srv, hits := namedAPI(t, spent)
					gate := gt.make(t, name+":")
					var procs []*heed.Transport
					for range 3 {
						tr := heed.New(nil, heed.WithGate(gate()), heed.WithPolicy(heed.Policy{MaxAttempts: 1, MaxWait: 100 * time.Millisecond}))
						t.Cleanup(tr.CloseIdleConnections)
						procs = append(procs, tr)
					}
					start := time.Now()
					for i, st := range api.steps {
						before := hitsOf(hits, st.path)
						ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
						req, err := http.NewRequestWithContext(ctx, st.method, srv.URL+st.path, nil)
						require.NoError(t, err)
						asked := time.Now()
						resp, err := procs[st.process].RoundTrip(req)
						cancel()
						if resp != nil {
							resp.Body.Close()
						}
						what := st.method + " " + st.path + " from process " + strconv.Itoa(st.process) + " (step " + strconv.Itoa(i) + ")"
						if st.sent {
							assert.Equal(t, before+1, hitsOf(hits, st.path), "%s is sent", what)
							if i > 0 {
								assert.NoError(t, err, what)
								assert.Less(t, time.Since(asked), time.Second, "%s is sent at once", what)
							}
						} else {
							assert.Equal(t, before, hitsOf(hits, st.path), "%s is not sent", what)
						}
						if st.held {
							var de *heed.DeferredError
							if assert.ErrorAs(t, err, &de, what) {
								assert.False(t, de.RetryAt.Before(start.Add(spent)), "%s: RetryAt %v, before the limit's end %v", what, de.RetryAt.Sub(start), spent)
							}
						}
					}
				})
			}
		}
	}
}
