package main

import (
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// hit is what a server saw of one request, once it had read the body.
type hit struct {
	At     time.Time
	Method string
	Header http.Header
	Size   int64
	Sum    [sha256.Size]byte // of bodies up to hashLimit; zero above
}

// hashLimit is the largest body a server hashes; larger ones are counted
// only, so that hashing does not slow a big upload down.
const hashLimit = 8 << 20

// server is a loopback HTTP server on 127.0.0.1 that reads and hashes each
// request body, records the request, then lets answer reply to it (n counts
// requests from 1).
type server struct {
	*httptest.Server
	mu     sync.Mutex
	hits   []hit
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

// newServer starts a server; Close it when done.
func newServer(answer func(n int, w http.ResponseWriter, r *http.Request)) *server {
	s := &server{answer: answer}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Listener.Close()
	s.Listener = l
	s.Start()
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	size, _ := io.Copy(h, io.LimitReader(r.Body, hashLimit+1))
	rec := hit{Method: r.Method, Header: r.Header.Clone(), Size: size}
	if size <= hashLimit {
		h.Sum(rec.Sum[:0])
	} else {
		n, _ := io.Copy(io.Discard, r.Body)
		rec.Size += n
	}
	rec.At = time.Now()
	s.mu.Lock()
	s.hits = append(s.hits, rec)
	n := len(s.hits)
	s.mu.Unlock()
	s.answer(n, w, r)
}

// got returns the requests seen so far.
func (s *server) got() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits...)
}

// gaps returns the time between consecutive requests.
func (s *server) gaps() []time.Duration {
	h := s.got()
	var d []time.Duration
	for i := 1; i < len(h); i++ {
		d = append(d, h[i].At.Sub(h[i-1].At))
	}
	return d
}

// drop closes the connection without answering.
func drop(w http.ResponseWriter) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}
