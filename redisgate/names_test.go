package redisgate

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// githubAPI is a loopback server with GitHub's two main limits, each named
// in every answer (x-ratelimit-resource): core, and search, which serves
// searches calls and then answers 403 with none left until a reset a
// minute ahead. It records each request, and each one that reached a
// limit already spent.
type githubAPI struct {
	searches int
	mu       sync.Mutex
	search   int       // searches served
	spent    time.Time // when search was spent
	got      []string
	early    []string // sent to a spent limit, after its last answer said so
}

func (a *githubAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, r.URL.Path)
	h := w.Header()
	h.Set("X-Ratelimit-Limit", "5000")
	if !strings.HasPrefix(r.URL.Path, "/search/") {
		h.Set("X-Ratelimit-Resource", "core")
		h.Set("X-Ratelimit-Remaining", "4000")
		h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		return
	}
	h.Set("X-Ratelimit-Resource", "search")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10))
	if a.search >= a.searches {
		if !a.spent.IsZero() {
			a.early = append(a.early, r.URL.Path)
		}
		a.spent = time.Now()
		h.Set("X-Ratelimit-Remaining", "0")
		w.WriteHeader(http.StatusForbidden)
		return
	}
	a.search++
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(a.searches-a.search))
	if a.search == a.searches {
		a.spent = time.Now()
	}
}

// TestProcessesKeepServerNamedScopesApart: three Transports, as of three
// processes, each on a redisgate of its own over one Redis, against a
// server that names its limits. Once search is spent, no search call goes
// out through any of them, the one that has never sent a search included,
// and core calls go at once through each, a shape of core only another
// process saw answered included. With a gate that holds the whole scope,
// the core calls would be held; with names each process learned alone,
// the third process's search would reach the spent limit.
func TestProcessesKeepServerNamedScopesApart(t *testing.T) {
	s := startRedis(t)
	for _, searches := range []int{1, 3} {
		t.Run("searches "+strconv.Itoa(searches), func(t *testing.T) {
			api := &githubAPI{searches: searches}
			srv := httptest.NewServer(api)
			t.Cleanup(srv.Close)
			var procs []*heed.Transport
			for range 3 {
				tr := heed.New(nil, heed.WithGate(New(s.client(t), patient, WithPrefix(t.Name()+":"))),
					heed.WithPolicy(heed.Policy{MaxWait: time.Second}))
				t.Cleanup(tr.CloseIdleConnections)
				procs = append(procs, tr)
			}
			send := func(p int, path string) (time.Duration, error) {
				start := time.Now()
				_, err := get(t, procs[p], srv.URL+path, 5*time.Second)
				return time.Since(start), err
			}
			// Process 0 learns two core shapes, so core is the default, and
			// spends search.
			for _, path := range []string{"/repos/o/r", "/user"} {
				_, err := send(0, path)
				require.NoError(t, err, path)
			}
			for i := 0; i < searches; i++ {
				_, err := send(0, "/search/issues")
				require.NoError(t, err)
			}
			// Processes 1 and 2 have sent nothing: their searches are held
			// at the gate, and their core calls go at once, a shape of core
			// never answered (pulls) included.
			for _, p := range []int{1, 2} {
				_, err := send(p, "/search/issues")
				var de *heed.DeferredError
				require.ErrorAs(t, err, &de, "process %d", p)
				assert.Zero(t, de.Attempts, "process %d: the search is held at the gate", p)
				assert.Greater(t, time.Until(de.RetryAt), 50*time.Second, "process %d", p)
				for _, path := range []string{"/repos/o/r", "/user", "/repos/a/b/pulls"} {
					took, err := send(p, path)
					require.NoError(t, err, "process %d: %s", p, path)
					assert.Less(t, took, 500*time.Millisecond, "process %d: %s is not held", p, path)
				}
			}
			api.mu.Lock()
			defer api.mu.Unlock()
			assert.Empty(t, api.early, "nothing reached search once spent")
			assert.Equal(t, searches, strings.Count(strings.Join(api.got, " "), "/search/"), "no search went out past the spent limit")
		})
	}
}

// namesHook records the arguments of each Redis command on the fleet's
// names, past the script, the key count and the key.
type namesHook struct {
	mu    sync.Mutex
	calls [][]any
}

func (h *namesHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *namesHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 3 && strings.Contains(fmt.Sprint(args[3]), "names}:pace") {
			h.mu.Lock()
			h.calls = append(h.calls, args[4:])
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *namesHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFleetNamesOfAServerThatNamesNone: against a server that names no
// limit, a Transport reads the fleet's names once a second while it
// sends, one round trip each, and writes nothing; 32 goroutines sending
// without a pause do not make it read more often.
func TestFleetNamesOfAServerThatNamesNone(t *testing.T) {
	s := startRedis(t)
	for _, tc := range []struct {
		name       string
		goroutines int
		pause      time.Duration
		sends      int // per goroutine
		most       int // reads
	}{
		{"one, a send a second", 1, 1100 * time.Millisecond, 3, 3},
		{"32 without a pause", 32, 0, 200, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.client(t)
			hook := &namesHook{}
			c.AddHook(hook)
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			t.Cleanup(srv.Close)
			tr := heed.New(nil, heed.WithGate(New(c, patient, WithPrefix(t.Name()+":"))))
			t.Cleanup(tr.CloseIdleConnections)
			start := time.Now()
			var wg sync.WaitGroup
			for range tc.goroutines {
				wg.Go(func() {
					for i := range tc.sends {
						if i > 0 {
							time.Sleep(tc.pause)
						}
						_, err := get(t, tr, srv.URL+"/x", 5*time.Second)
						assert.NoError(t, err)
					}
				})
			}
			wg.Wait()
			took := time.Since(start)
			hook.mu.Lock()
			defer hook.mu.Unlock()
			t.Logf("%d reads of the fleet's names in %v", len(hook.calls), took)
			assert.LessOrEqual(t, len(hook.calls), max(tc.most, int(took/time.Second)+2))
			for _, args := range hook.calls {
				assert.Equal(t, "-1", fmt.Sprint(args[0]), "a read, not a write: %v", args)
			}
		})
	}
}
