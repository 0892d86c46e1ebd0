package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildHeed builds the heed command into a temporary directory and returns
// the binary's path.
func buildHeed(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "heed")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runHeed runs the binary with args and returns its output and exit code.
func runHeed(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start), code: exitCode(t, err)}
	t.Logf("heed %q: exit %d in %s\nstdout: %s\nstderr: %s", args, r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
	return r
}

// exitCode returns the exit code of a command that ended with err, as
// exec.Cmd.Wait returns it, and fails the test if it did not run.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// scriptServer answers requests from a list of handlers in turn, repeating
// the last, and records what it received.
type scriptServer struct {
	*httptest.Server
	mu       sync.Mutex
	handlers []http.HandlerFunc
	reqs     []received
}

// received is what scriptServer saw of one request.
type received struct {
	at     time.Time
	method string
	header http.Header
	body   string
}

func newScriptServer(t *testing.T, handlers ...http.HandlerFunc) *scriptServer {
	s := &scriptServer{handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, received{at: time.Now(), method: r.Method, header: r.Header.Clone(), body: body.String()})
		h := s.handlers[min(len(s.reqs), len(s.handlers))-1]
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptServer) received() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.reqs...)
}

// reply returns a handler that answers status with headers (name, value
// pairs) and body.
func reply(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// newRawServer serves each connection on 127.0.0.1 with the next of
// responses, written byte for byte as given (the last repeats), after
// reading one request; then it closes the connection. It is for what
// net/http's server will not send, such as a status text of one's own.
func newRawServer(t *testing.T, responses ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			if _, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
				_, _ = io.WriteString(conn, responses[min(n, len(responses)-1)])
			}
			conn.Close()
		}
	}()
	return "http://" + l.Addr().String()
}

// rawResponse is an HTTP/1.1 response with status line "HTTP/1.1 "+status,
// the headers given as "Name: value" lines, and body.
func rawResponse(status, body string, headers ...string) string {
	var b strings.Builder
	b.WriteString("HTTP/1.1 " + status + "\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	return b.String()
}
