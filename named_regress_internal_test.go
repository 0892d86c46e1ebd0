package heed

// Regression tests of limits the server names (named.go), from reviews of
// the bounds and the waits: each failed before its fix.

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func rvReq(i int) *http.Request {
	var b strings.Builder
	for ; ; i /= 26 {
		b.WriteByte(byte('a' + i%26))
		if i < 26 {
			break
		}
	}
	r, _ := http.NewRequest("GET", "https://api.test/x/"+b.String(), nil)
	return r
}

// live keeps one entry per name ever held: never pruned, unbounded.
func TestNamedLiveIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n names
		for i := range 3 * namedKeep {
			name := "bucket b" + strconv.Itoa(i)
			n.learn("host", &lazyShape{req: rvReq(i)}, name)
			n.held("host", name, time.Now().Add(time.Millisecond))
			time.Sleep(2 * time.Millisecond)
		}
		sn := n.scopes["host"]
		t.Logf("shapes %d, live %d", len(sn.shapes), len(sn.live))
		if len(sn.live) > namedKeep {
			t.Errorf("live holds %d names, past namedKeep %d: unbounded", len(sn.live), namedKeep)
		}
	})
}

// Full of live shapes: every answer of a new shape scans all 4096 twice
// under the write lock, and learns nothing, so the next answer scans again.
// With no default (Discord), every new shape scans all 4096 in the first pass.

// Shapes full of live limits: a 429 naming search (not learnable) holds
// the whole request scope; nothing of the host is sent inside it.
func TestNamedFullBoundsHoldTheScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		rt := rvFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, r.URL.Path)
			mu.Unlock()
			if strings.HasPrefix(r.URL.Path, "/search") {
				h := rvGithub("search", 0, time.Minute)
				h.Set("Retry-After", "60")
				return &http.Response{StatusCode: 429, Header: h, Body: http.NoBody, Request: r}, nil
			}
			return &http.Response{StatusCode: 200, Header: rvGithub("core", 4999, time.Hour), Body: http.NoBody, Request: r}, nil
		})
		tr := New(rt, WithPolicy(Policy{MaxAttempts: 1, MaxWait: time.Second}))
		do := func(path string) error {
			req, _ := http.NewRequest("GET", "https://api.github.com"+path, nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		do("/user")
		var scope string
		for k := range tr.named.scopes {
			scope = k
		}
		for i := 0; len(tr.named.scopes[scope].shapes) < namedKeep; i++ {
			r, _ := http.NewRequest("GET", "https://api.github.com/f/"+strconv.Itoa(i)+"x/"+strings.Repeat("q", i%50)+string(rune('a'+i/50%26))+string(rune('a'+i/1300%26)), nil)
			name := "resource r" + strconv.Itoa(i)
			tr.named.learn(scope, &lazyShape{req: r}, name)
			tr.named.held(scope, name, time.Now().Add(time.Hour))
		}
		tr.named.held(scope, "resource core", time.Now().Add(time.Hour))
		err := do("/search/issues")
		t.Logf("search: %v; fallback %q", err, tr.named.scopes[scope].fallback)
		mu.Lock()
		sent = nil
		mu.Unlock()
		for _, p := range []string{"/search/issues", "/user", "/repos/a/b/issues"} {
			err := do(p)
			t.Logf("%s: %v", p, err)
		}
		if len(sent) > 0 {
			t.Errorf("sent %v inside the whole scope's hold", sent)
		}
	})
}

// Limit Rate 1/s. S1=/search/issues learned as search; B (/search/code,
// new) in flight; S1 spends search (remaining 0, a minute) in its named
// scope; A (/search/code, still unknown) admitted in the request scope,
// waits for its Limit slot; B's answer (served earlier, remaining 2) then
// names search for /search/code. After the slot wait A looks the name up
// again (awaitHold) but holdEnd reads holds only, not the spent quota.
func TestNamedSlotWaitSeesASpentLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var sent []string
		n := 0
		rt := rvFunc(func(r *http.Request) (*http.Response, error) {
			id := r.Header.Get("X-Id")
			mu.Lock()
			sent = append(sent, id+"@"+time.Since(start).String())
			n++
			mu.Unlock()
			rem := 5
			switch id {
			case "B":
				time.Sleep(1500 * time.Millisecond)
				rem = 2
			case "S1b":
				rem = 0
			}
			return &http.Response{StatusCode: 200, Header: rvGithub("search", rem, time.Minute), Body: http.NoBody, Request: r}, nil
		})
		tr := New(rt, WithPolicy(Policy{MaxAttempts: 1, MaxWait: 5 * time.Minute, Limit: Limit{Rate: 1}}))
		do := func(id, path string) error {
			req, _ := http.NewRequest("GET", "https://api.github.com"+path, nil)
			req.Header.Set("X-Id", id)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		var wg sync.WaitGroup
		do("S1", "/search/issues")
		time.Sleep(500 * time.Millisecond)
		wg.Go(func() { do("B", "/search/code") })
		time.Sleep(700 * time.Millisecond)
		do("S1b", "/search/issues")
		time.Sleep(100 * time.Millisecond)
		err := do("A", "/search/code")
		wg.Wait()
		t.Logf("sends %v; A err=%v", sent, err)
		for _, s := range sent {
			if d, _ := time.ParseDuration(s[2:]); s[:2] == "A@" && d < 62*time.Second {
				t.Errorf("A sent at %s, inside search's spent quota (reset +62s)", s)
			}
		}
	})
}

type rvFunc func(*http.Request) (*http.Response, error)

func (f rvFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func rvGithub(res string, rem int, reset time.Duration) http.Header {
	return http.Header{"X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Remaining": {strconv.Itoa(rem)},
		"X-Ratelimit-Reset": {strconv.FormatInt(time.Now().Add(reset).Unix(), 10)}, "X-Ratelimit-Resource": {res}}
}

type rvConn struct {
	net.Conn
	mu sync.Mutex
	dl time.Time
}

func (c *rvConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.dl = t
	c.mu.Unlock()
	return nil
}
func (c *rvConn) refuses() bool { c.mu.Lock(); defer c.mu.Unlock(); return !c.dl.IsZero() }

// A is paced (the scope's adaptive pace is on); while A waits for its
// pacing token, R1 (same shape, unknown) is answered 429 naming search,
// Retry-After 60. A was looked up before the pace wait, and is admitted
// in the request scope: sent inside search's hold.
func TestNamedPaceWaitRelearns(t *testing.T) {
	for _, tc := range []struct {
		wire  bool
		queue int
		ra    string
	}{{false, 0, "60"}, {true, 0, "60"}, {true, 40, "600"}} {
		wire := tc.wire
		t.Run(strconv.FormatBool(wire)+"/"+strconv.Itoa(tc.queue), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var mu sync.Mutex
				var sent []string
				rt := rvFunc(func(r *http.Request) (*http.Response, error) {
					id := r.Header.Get("X-Id")
					if id == "A" && wire {
						conn := &rvConn{}
						if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.GotConn != nil {
							tr.GotConn(httptrace.GotConnInfo{Conn: conn})
						}
						if conn.refuses() {
							return nil, context.Canceled
						}
					}
					mu.Lock()
					if id != "W" || len(sent) < 2 {
						sent = append(sent, id+"@"+time.Since(start).String())
					}
					mu.Unlock()
					if id == "R1" {
						h := rvGithub("search", 5, time.Minute)
						h.Set("Retry-After", tc.ra)
						return &http.Response{StatusCode: 429, Header: h, Body: http.NoBody, Request: r}, nil
					}
					return &http.Response{StatusCode: 200, Header: rvGithub("core", 4999, time.Hour), Body: http.NoBody, Request: r}, nil
				})
				tr := New(rt, WithPolicy(Policy{MaxAttempts: 1, MaxWait: 5 * time.Minute}))
				do := func(id, path string) error {
					req, _ := http.NewRequest("GET", "https://api.github.com"+path, nil)
					req.Header.Set("X-Id", id)
					resp, err := tr.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					}
					return err
				}
				do("W", "/user")
				// The scope's adaptive pace is on: a token every 2 s, none left.
				for _, sl := range tr.scopes {
					a := &sl.limiter
					a.mu.Lock()
					a.enabled, a.fillRate, a.capacity = true, 0.5, 1
					a.granted, a.lastFill = a.issued, time.Now()
					a.active.Store(true)
					a.mu.Unlock()
				}
				var wg sync.WaitGroup
				wg.Go(func() { do("R1", "/search/issues") })
				time.Sleep(100 * time.Millisecond)
				for range tc.queue {
					wg.Go(func() { do("W", "/user") })
				}
				time.Sleep(100 * time.Millisecond)
				err := do("A", "/search/issues")
				wg.Wait()
				t.Logf("sends %v; A err=%v", sent, err)
				for _, s := range sent {
					if d, _ := time.ParseDuration(s[2:]); s[:2] == "A@" && d < 2*time.Second+func() time.Duration { x, _ := strconv.Atoi(tc.ra); return time.Duration(x) * time.Second }() {
						t.Errorf("A sent at %s, inside search's 60 s hold", s)
					}
				}
			})
		})
	}
}
