package redisgate

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// redisServer is a redis-server the tests started on a free loopback port.
type redisServer struct {
	addr string
	bin  string
	out  *bytes.Buffer

	mu  sync.Mutex
	cmd *exec.Cmd // nil once stopped
}

// startRedis starts a redis-server for t and stops it when t ends. It skips
// t when the binary is missing.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const msg = "redis-server not found: install it (Debian, Ubuntu: apt-get install -y redis-server) to run the redisgate tests"
		if os.Getenv("HEED_REQUIRE_REDIS") == "1" {
			t.Fatal(msg + "; HEED_REQUIRE_REDIS=1 makes that a failure")
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	s := &redisServer{addr: "127.0.0.1:" + port, bin: bin, out: &bytes.Buffer{}}
	t.Cleanup(s.stop)
	s.launch(t)
	return s
}

// launch starts redis-server on s's address and waits until it answers.
func (s *redisServer) launch(t testing.TB) {
	t.Helper()
	_, port, err := net.SplitHostPort(s.addr)
	require.NoError(t, err)
	cmd := exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = s.out, s.out
	require.NoError(t, cmd.Start())
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()

	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.stop()
			t.Fatalf("redis-server on %s did not answer: %v\n%s", s.addr, err, s.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop kills the server, at once, and waits for it to exit.
func (s *redisServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// restart kills the server and starts an empty one on the same address, as
// a Redis without persistence comes back from a crash.
func (s *redisServer) restart(t testing.TB) {
	t.Helper()
	s.stop()
	s.launch(t)
}

// pause stops the server with SIGSTOP until t ends or resume is called: it
// keeps its connections and answers nothing, as a Redis that hangs does.
func (s *redisServer) pause(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { s.resume(t) })
}

// resume lets a paused server go on.
func (s *redisServer) resume(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGCONT)
}

func (s *redisServer) signal(t testing.TB, sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		require.NoError(t, syscall.Kill(s.cmd.Process.Pid, sig))
	}
}

// client returns a client of s that honours contexts' deadlines, closed
// when t ends.
func (s *redisServer) client(t testing.TB) *redis.Client {
	return s.clientWith(t, true)
}

// clientWith returns a client of s, closed when t ends; ctxTimeout sets
// its ContextTimeoutEnabled.
func (s *redisServer) clientWith(t testing.TB, ctxTimeout bool) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: ctxTimeout})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
