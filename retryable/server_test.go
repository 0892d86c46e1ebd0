package retryable_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/retryable"
)

// answer is one scripted reply of a server: a response, or a dropped
// connection after the request was read.
type answer struct {
	status int
	header map[string]string
	body   string
	drop   bool
}

// got is what the server saw of one request.
type got struct {
	at     time.Time
	method string
	header http.Header
	body   []byte
}

// server is an httptest server on 127.0.0.1 that answers from a script,
// repeating the last answer, and records every request.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	script  []answer
	got     []got
	handler func(w http.ResponseWriter, r *http.Request) bool // optional: true when it answered
}

func newServer(t *testing.T, script ...answer) *server {
	t.Helper()
	s := &server{script: script}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.got = append(s.got, got{at: time.Now(), method: r.Method, header: r.Header.Clone(), body: body})
	n := len(s.got)
	h := s.handler
	s.mu.Unlock()
	if h != nil && h(w, r) {
		return
	}
	a := s.script[min(n, len(s.script))-1]
	if a.drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// requests returns what the server has seen so far.
func (s *server) requests() []got {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]got(nil), s.got...)
}

// gaps returns the time between consecutive requests.
func (s *server) gaps() []time.Duration {
	g := s.requests()
	var d []time.Duration
	for i := 1; i < len(g); i++ {
		d = append(d, g[i].at.Sub(g[i-1].at))
	}
	return d
}

// newClient returns a retryablehttp client configured by the adapter, with
// short waits, that closes its connections when the test ends.
func newClient(t *testing.T, opts ...heed.Option) *retryablehttp.Client {
	t.Helper()
	c := retryablehttp.NewClient()
	c.Logger = nil
	retryable.Configure(c, opts...)
	t.Cleanup(c.HTTPClient.CloseIdleConnections)
	return c
}

// quick is a policy with short waits for tests.
func quick(p heed.Policy) heed.Option {
	if p.MinWait == 0 {
		p.MinWait = 20 * time.Millisecond
	}
	if p.Backoff == nil {
		p.Backoff = heed.Constant(20 * time.Millisecond)
	}
	return heed.WithPolicy(p)
}
