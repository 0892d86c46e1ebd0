// Test fixtures: a real redis-server, a real asynq server and client, and a
// fake API on loopback that records what it is sent.

package heedasynq_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedasynq"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"
)

// startRedis starts a redis-server on a free loopback port, stops it when
// t ends and returns its address. It skips t when the binary is missing,
// unless HEED_REQUIRE_REDIS=1 makes that a failure.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const msg = "redis-server not found: install it (Debian, Ubuntu: apt-get install -y redis-server) to run the heedasynq tests"
		if os.Getenv("HEED_REQUIRE_REDIS") == "1" {
			t.Fatal(msg + "; HEED_REQUIRE_REDIS=1 makes that a failure")
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	addr := "127.0.0.1:" + port

	var out bytes.Buffer
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); !pingRedis(addr); {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer:\n%s", addr, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr
}

// pingRedis reports whether a redis server on addr answers PING.
func pingRedis(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// queue is the asynq queue the tests use.
const queue = "heed"

// startAsynq runs an asynq server on the redis at addr with cfg, short
// polling intervals and heedasynq.Configure applied, processing tasks with
// heedasynq.Middleware(h). It returns a client and an inspector; all three
// stop when t ends.
func startAsynq(t *testing.T, addr string, cfg asynq.Config, h asynq.HandlerFunc) (*asynq.Client, *asynq.Inspector) {
	t.Helper()
	startServer(t, addr, cfg, h)
	opt := asynq.RedisClientOpt{Addr: addr}
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = insp.Close() })
	return client, insp
}

// startServer runs an asynq server as startAsynq does, and returns it: a
// worker process of its own, which a test may shut down before t ends.
func startServer(t *testing.T, addr string, cfg asynq.Config, h asynq.HandlerFunc) *asynq.Server {
	t.Helper()
	opt := asynq.RedisClientOpt{Addr: addr}
	cfg.Concurrency = 4
	cfg.Queues = map[string]int{queue: 1}
	cfg.TaskCheckInterval = 20 * time.Millisecond
	cfg.DelayedTaskCheckInterval = 50 * time.Millisecond
	cfg.ShutdownTimeout = 3 * time.Second
	cfg.Logger = testLogger{t}
	cfg.LogLevel = asynq.WarnLevel
	heedasynq.Configure(&cfg)
	srv := asynq.NewServer(opt, cfg)
	require.NoError(t, srv.Start(heedasynq.Middleware(h)))
	t.Cleanup(srv.Shutdown)
	return srv
}

// testLogger sends asynq's log to t.
type testLogger struct{ t *testing.T }

func (l testLogger) Debug(args ...any) { l.t.Log(append([]any{"asynq debug:"}, args...)...) }
func (l testLogger) Info(args ...any)  { l.t.Log(append([]any{"asynq info:"}, args...)...) }
func (l testLogger) Warn(args ...any)  { l.t.Log(append([]any{"asynq warn:"}, args...)...) }
func (l testLogger) Error(args ...any) { l.t.Log(append([]any{"asynq error:"}, args...)...) }
func (l testLogger) Fatal(args ...any) { l.t.Fatal(append([]any{"asynq fatal:"}, args...)...) }

// keyHeader is the idempotency-key header the fake API reads, named in the
// Policy of every test that expects heed to add a key.
const keyHeader = "Idempotency-Key"

// heedClient returns an http.Client sending through a heed Transport with
// policy p over a transport of its own, closed when t ends.
func heedClient(t *testing.T, p heed.Policy) *http.Client {
	t.Helper()
	inner := &http.Transport{}
	t.Cleanup(inner.CloseIdleConnections)
	return &http.Client{Transport: heed.New(inner, heed.WithPolicy(p))}
}

// answer is a response the fake API gives: a status and, when not empty,
// a Retry-After header.
type answer struct {
	status     int
	retryAfter string
}

// request is what the fake API saw of one request.
type request struct {
	at     time.Time
	method string
	path   string
	task   string // the X-Task header
	key    string // the Idempotency-Key header
}

// fakeAPI answers each path with its scripted answers in turn, then 201,
// and records every request. It applies each idempotency key once: a
// request whose key it answered 201 before gets 200 and is not applied
// again.
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	answers map[string][]answer
	seen    []request
	applied map[string]int // 201s by key
}

// newFakeAPI starts a fakeAPI on loopback, closed when t ends.
func newFakeAPI(t *testing.T, answers map[string][]answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answers: answers, applied: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, request{
		at: time.Now(), method: r.Method, path: r.URL.Path,
		task: r.Header.Get("X-Task"), key: r.Header.Get(keyHeader),
	})
	a := answer{status: http.StatusCreated}
	key := r.Header.Get(keyHeader)
	switch script := f.answers[r.URL.Path]; {
	case key != "" && f.applied[key] > 0:
		a = answer{status: http.StatusOK} // applied before: a replay
	case len(script) > 0:
		a, f.answers[r.URL.Path] = script[0], script[1:]
	}
	if a.status == http.StatusCreated && key != "" {
		f.applied[key]++
	}
	f.mu.Unlock()
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
}

// timesApplied returns how many requests with key the API applied.
func (f *fakeAPI) timesApplied(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied[key]
}

// requests returns the requests seen so far, those of task when not empty.
func (f *fakeAPI) requests(task string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.seen {
		if task == "" || r.task == task {
			out = append(out, r)
		}
	}
	return out
}

// post sends an empty POST to url through c, labelled with task, and
// returns the error, or one naming a status that is not 2xx.
func post(ctx context.Context, c *http.Client, url, task string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Task", task)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &statusError{resp.StatusCode}
	}
	return nil
}

// statusError is a response with an unexpected status.
type statusError struct{ status int }

func (e *statusError) Error() string { return "unexpected status " + strconv.Itoa(e.status) }

// taskInfo polls the inspector until the task id is in one of states, at
// most for within, and returns its info.
func taskInfo(t *testing.T, insp *asynq.Inspector, id string, within time.Duration, states ...asynq.TaskState) *asynq.TaskInfo {
	t.Helper()
	var last *asynq.TaskInfo
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		info, err := insp.GetTaskInfo(queue, id)
		if err != nil {
			continue
		}
		last = info
		for _, s := range states {
			if info.State == s {
				return info
			}
		}
	}
	if last == nil {
		t.Fatalf("task %s not found within %v", id, within)
	}
	t.Fatalf("task %s still %v after %v, want one of %v (last error %q)", id, last.State, within, states, last.LastErr)
	return nil
}
