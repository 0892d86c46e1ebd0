package heed_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heed-go/heed"
)

// The chaos soak: 64 goroutines send 10,000 mixed GET/PUT/POST calls through
// one heed Transport over a real loopback http.Transport to a server that
// injects, at random, every failure heed is meant to survive. It checks the
// four promises (nothing early, nothing duplicated, nothing leaked, nothing
// stuck) and prints the figures docs/reliability.md shows.
//
// `go test -short` skips it. It takes a few seconds, under -race too.

const (
	soakWorkers  = 64
	soakCalls    = 10_000
	soakMinWait  = 5 * time.Millisecond
	soakMaxWait  = 2500 * time.Millisecond
	soakCallTime = 5 * time.Second        // most calls' deadline
	soakShortCtx = 300 * time.Millisecond // 10% of calls: hints of 1s do not fit
	soakWall     = 50 * time.Second       // the whole soak, or fail
	// heed drains a discarded body for at most 64 KiB and 250ms; the slack
	// is for a loaded 2-core machine under -race.
	soakDrainBytes = 64 << 10
	soakDrainTime  = 250 * time.Millisecond
	soakSlack      = 750 * time.Millisecond
	soakHeapBound  = 256 << 20
	// Connections die with resets, lost responses and bodies that are not
	// drained whole; the rest must be reused.
	soakConnBound = 0.35
)

// Headers of the soak's own protocol.
const (
	hCallID    = "X-Call-Id"         // one per logical call, kept on every attempt
	hBodySum   = "X-Body-Sha256"     // sha256 of the request body, set by the caller
	hNotBefore = "X-Soak-Not-Before" // Unix ns before which the server wants no retry
	hFault     = "X-Soak-Fault"      // the fault the server injected
	hHint      = "X-Soak-Hint"       // the wait it asked for, as a Duration
)

// soakFault is one kind of answer the chaos server gives.
type soakFault struct {
	name   string
	weight float64
}

// The faults, weighted per attempt. Hints of whole seconds and dates (1s
// resolution) are rare, to keep the soak short.
var soakFaults = []soakFault{
	{"ok", 62},
	{"429 Retry-After: 0", 2},
	{"429 Retry-After: 1", 0.3},
	{"429 Retry-After: IMF-fixdate", 0.15},
	{"429 Retry-After: RFC 850 date", 0.15},
	{"429 Retry-After: asctime date", 0.15},
	{"429 retry-after-ms", 4},
	{"429 x-ms-retry-after-ms", 2},
	{"429 RateLimit t=0", 2},
	{"429 RateLimit t=1", 0.1},
	{"429 Retry-After: 99999999999 (overflows: backoff)", 1},
	{"429 x-ms-retry-after-ms: 99999999999999999999 (overflows: backoff)", 1},
	{"503 retry-after-ms", 3},
	{"503 retry-after-ms, 1 MiB body", 1},
	{"503 retry-after-ms, endless body", 0.5},
	{"503 retry-after-ms, slow endless body", 0.5},
	{"500", 2},
	{"502", 2},
	{"504", 2},
	{"500, 1 MiB body", 1},
	{"reset before the body is read", 3},
	{"reset after the body is read (write applied)", 3},
	{"response lost after the write was applied", 3},
}

// soakAbsurd is what the server answers on /absurd/: a valid wait of
// 99999999999 ms (3.2 years), beside values that overflow.
const soakAbsurd = "429 retry-after-ms: 99999999999 (defers)"

// soakCall is what the server knows of one logical call.
type soakCall struct {
	notBefore time.Time // no attempt of this call may arrive before it
	sum       string    // sha256 of the first body seen
	applied   int       // writes applied for this call
}

type soakServer struct {
	big []byte // a 1 MiB error body

	mu            sync.Mutex
	rng           *rand.Rand
	calls         map[string]*soakCall
	keys          map[string]bool // Idempotency-Keys whose write was applied
	faults        map[string]int
	early         []string
	sumMismatch   int // body differs from its sha256 header
	replayDiffers int // a replayed body differs from the first
	dupWrites     int // a keyless POST applied twice
	keyDedup      int // a keyed write answered from the key, not applied again
	attempts      int
	absurdHits    int

	newConns atomic.Int64
	handlers sync.WaitGroup
}

func newSoakServer(seed uint64) *soakServer {
	return &soakServer{
		big:    bytes.Repeat([]byte("e"), 1<<20),
		rng:    rand.New(rand.NewPCG(seed, 1)),
		calls:  make(map[string]*soakCall),
		keys:   make(map[string]bool),
		faults: make(map[string]int),
	}
}

func (s *soakServer) pick() string {
	var total float64
	for _, f := range soakFaults {
		total += f.weight
	}
	x := s.rng.Float64() * total
	for _, f := range soakFaults {
		if x -= f.weight; x < 0 {
			return f.name
		}
	}
	return "ok"
}

func (s *soakServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	arrived := time.Now()
	id := r.Header.Get(hCallID)

	s.mu.Lock()
	s.attempts++
	c := s.calls[id]
	if c == nil {
		c = &soakCall{}
		s.calls[id] = c
	}
	if arrived.Before(c.notBefore) {
		s.early = append(s.early, fmt.Sprintf("call %s arrived %v before %v", id, c.notBefore.Sub(arrived), c.notBefore))
	}
	fault := soakAbsurd
	if strings.HasPrefix(r.URL.Path, "/absurd/") {
		s.absurdHits++
	} else {
		fault = s.pick()
	}
	s.faults[fault]++
	s.mu.Unlock()

	if fault == "reset before the body is read" {
		s.reset(w, true)
		return
	}

	// Read the body and check it against its sum and its first sending.
	body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	if err != nil {
		return
	}
	sum := sha256.Sum256(body)
	hexSum := hex.EncodeToString(sum[:])
	write := r.Method == http.MethodPut || r.Method == http.MethodPost
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	if write && r.Header.Get(hBodySum) != hexSum {
		s.sumMismatch++
	}
	if c.sum == "" {
		c.sum = hexSum
	} else if c.sum != hexSum {
		s.replayDiffers++
	}
	s.mu.Unlock()

	// Apply the write where the server processes the request: success, a
	// 5xx (worst case: applied, then failed), a lost response.
	applies := !strings.HasPrefix(fault, "429") && !strings.HasPrefix(fault, "503")
	if write && applies {
		s.mu.Lock()
		switch {
		case key != "" && s.keys[key]:
			s.keyDedup++
		case key != "":
			s.keys[key] = true
			c.applied++
		default:
			c.applied++
			if r.Method == http.MethodPost && c.applied > 1 {
				s.dupWrites++
			}
		}
		s.mu.Unlock()
	}

	h := w.Header()
	h.Set(hFault, fault)
	now := time.Now()
	hint := func(wait time.Duration, until time.Time) {
		if until.IsZero() {
			until = now.Add(wait)
		}
		s.mu.Lock()
		if until.After(c.notBefore) {
			c.notBefore = until
		}
		s.mu.Unlock()
		h.Set(hNotBefore, strconv.FormatInt(until.UnixNano(), 10))
		h.Set(hHint, wait.String())
	}
	ms := func() time.Duration {
		s.mu.Lock()
		defer s.mu.Unlock()
		return time.Duration(1+s.rng.IntN(40)) * time.Millisecond
	}
	// A date a little ahead, on a whole second: the instant it names.
	date := func() time.Time { return now.Truncate(time.Second).Add(time.Second) }

	switch fault {
	case "ok":
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, "ok")
	case soakAbsurd:
		hint(99999999999*time.Millisecond, time.Time{})
		h.Set("Retry-After-Ms", "99999999999")
		h.Set("Retry-After", "99999999999999999999")
		h.Set("RateLimit", `"soak";r=0;t=999999999999999999`)
		w.WriteHeader(http.StatusTooManyRequests)
	case "429 Retry-After: 0":
		hint(0, time.Time{})
		h.Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	case "429 Retry-After: 1":
		hint(time.Second, time.Time{})
		h.Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	case "429 Retry-After: IMF-fixdate", "429 Retry-After: RFC 850 date", "429 Retry-After: asctime date":
		d := date()
		hint(d.Sub(now), d)
		switch {
		case strings.Contains(fault, "IMF"):
			h.Set("Retry-After", d.UTC().Format(http.TimeFormat))
		case strings.Contains(fault, "850"):
			h.Set("Retry-After", d.UTC().Format("Monday, 02-Jan-06 15:04:05 GMT"))
		default:
			h.Set("Retry-After", d.UTC().Format(time.ANSIC))
		}
		w.WriteHeader(http.StatusTooManyRequests)
	case "429 retry-after-ms", "429 x-ms-retry-after-ms":
		d := ms()
		hint(d, time.Time{})
		if strings.Contains(fault, "x-ms") {
			h.Set("X-Ms-Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
		} else {
			h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"type":"rate_limit_exceeded"}}`)
	case "429 RateLimit t=0":
		hint(0, time.Time{})
		h.Set("RateLimit", `"soak";r=0;t=0`)
		w.WriteHeader(http.StatusTooManyRequests)
	case "429 RateLimit t=1":
		hint(time.Second, time.Time{})
		h.Set("RateLimit", `"soak";r=0;t=1`)
		w.WriteHeader(http.StatusTooManyRequests)
	case "429 Retry-After: 99999999999 (overflows: backoff)":
		h.Set("Retry-After", "99999999999")
		w.WriteHeader(http.StatusTooManyRequests)
	case "429 x-ms-retry-after-ms: 99999999999999999999 (overflows: backoff)":
		h.Set("X-Ms-Retry-After-Ms", "99999999999999999999")
		w.WriteHeader(http.StatusTooManyRequests)
	case "503 retry-after-ms", "503 retry-after-ms, 1 MiB body":
		d := ms()
		hint(d, time.Time{})
		h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
		w.WriteHeader(http.StatusServiceUnavailable)
		if strings.Contains(fault, "1 MiB") {
			_, _ = w.Write(s.big)
		}
	case "503 retry-after-ms, endless body", "503 retry-after-ms, slow endless body":
		d := 10 * time.Millisecond
		hint(d, time.Time{})
		h.Set("Retry-After-Ms", "10")
		w.WriteHeader(http.StatusServiceUnavailable)
		s.endless(w, r, strings.Contains(fault, "slow"))
	case "500", "502", "504", "500, 1 MiB body":
		code, _ := strconv.Atoi(fault[:3])
		w.WriteHeader(code)
		if strings.Contains(fault, "1 MiB") {
			_, _ = w.Write(s.big)
		}
	case "reset after the body is read (write applied)":
		s.reset(w, true)
	case "response lost after the write was applied":
		s.reset(w, false)
	default:
		panic("unknown fault " + fault)
	}
}

// reset drops the connection unanswered: with rst, as a TCP reset
// (SO_LINGER 0); else closed as usual.
func (s *soakServer) reset(w http.ResponseWriter, rst bool) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// endless streams a body until the client goes away (or 20 s pass): fast
// in 32 KiB chunks, or slow, 16 bytes every 20ms.
func (s *soakServer) endless(w http.ResponseWriter, r *http.Request, slow bool) {
	rc := http.NewResponseController(w)
	chunk := s.big[:32<<10]
	pause := time.Duration(0)
	if slow {
		chunk, pause = s.big[:16], 20*time.Millisecond
	}
	stop := time.Now().Add(20 * time.Second)
	for time.Now().Before(stop) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		if pause > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(pause):
			}
		} else if r.Context().Err() != nil {
			return
		}
	}
}

// soakSpy sits between heed and the real http.Transport: it sees each send
// as heed makes it, and each response as heed gets it. It checks that no
// attempt is sent before the instant the server named for its call, and
// records how heed drains the bodies it discards.
type soakSpy struct {
	next http.RoundTripper

	mu        sync.Mutex
	notBefore map[string]time.Time // by call: the server's latest instant
	endless   map[string]soakRecv  // by call: an endless body was received
	early     []string
	stalls    []string
	maxStall  time.Duration // longest gap from an endless 503 to its retry, beyond its hint
	discards  []*spyBody
	all       []*spyBody
	bodies    sync.Map // *http.Response -> *spyBody, until delivered or closed
}

type soakRecv struct {
	at   time.Time
	hint time.Duration
}

func (s *soakSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	id := r.Header.Get(hCallID)
	now := time.Now()
	s.mu.Lock()
	if nb := s.notBefore[id]; now.Before(nb) {
		s.early = append(s.early, fmt.Sprintf("call %s sent %v before %v", id, nb.Sub(now), nb))
	}
	if e, ok := s.endless[id]; ok {
		delete(s.endless, id)
		beyond := now.Sub(e.at) - max(e.hint, soakMinWait)
		s.maxStall = max(s.maxStall, beyond)
		if beyond > soakDrainTime+soakSlack {
			s.stalls = append(s.stalls, fmt.Sprintf("call %s: retry %v after an endless body's hint", id, beyond))
		}
	}
	s.mu.Unlock()

	resp, err := s.next.RoundTrip(r)
	if resp == nil {
		return resp, err
	}
	recv := time.Now()
	if v := resp.Header.Get(hNotBefore); v != "" {
		ns, _ := strconv.ParseInt(v, 10, 64)
		nb := time.Unix(0, ns)
		s.mu.Lock()
		if nb.After(s.notBefore[id]) {
			s.notBefore[id] = nb
		}
		if strings.Contains(resp.Header.Get(hFault), "endless") {
			hint, _ := time.ParseDuration(resp.Header.Get(hHint))
			s.endless[id] = soakRecv{recv, hint}
		}
		s.mu.Unlock()
	}
	sb := &spyBody{rc: resp.Body, recv: recv, fault: resp.Header.Get(hFault), spy: s, resp: resp}
	resp.Body = sb
	s.mu.Lock()
	s.all = append(s.all, sb)
	s.mu.Unlock()
	s.bodies.Store(resp, sb)
	return resp, err
}

// CloseIdleConnections forwards to the real transport, as heed's does.
func (s *soakSpy) CloseIdleConnections() {
	if c, ok := s.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// delivered marks resp as handed to the caller: its body is the caller's
// to read, not a discard.
func (s *soakSpy) delivered(resp *http.Response) {
	if v, ok := s.bodies.LoadAndDelete(resp); ok {
		b := v.(*spyBody)
		b.delivered.Store(true)
		b.once.Do(func() { b.resp = nil })
	}
}

// notBeforeOf returns the latest instant the server named for a call.
func (s *soakSpy) notBeforeOf(id string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notBefore[id]
}

// spyBody counts what is read from a response body and when it is closed.
type spyBody struct {
	rc        io.ReadCloser
	recv      time.Time
	fault     string
	spy       *soakSpy
	resp      *http.Response
	read      atomic.Int64
	delivered atomic.Bool
	once      sync.Once
	closedIn  time.Duration
	closed    atomic.Bool
}

func (b *spyBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *spyBody) Close() error {
	b.closed.Store(true)
	b.once.Do(func() {
		if b.delivered.Load() {
			return
		}
		b.closedIn = time.Since(b.recv)
		b.spy.bodies.Delete(b.resp)
		b.resp = nil // keep no request (and its body) alive
		b.spy.mu.Lock()
		b.spy.discards = append(b.spy.discards, b)
		b.spy.mu.Unlock()
	})
	return b.rc.Close()
}

// soakOutcome names how a call ended, or fails the soak for an error that
// does not say what happened.
func soakOutcome(resp *http.Response, err error) (string, bool) {
	var de *heed.DeferredError
	switch {
	case err == nil && resp.StatusCode < 300:
		return "response 2xx", true
	case err == nil:
		return "response " + strconv.Itoa(resp.StatusCode) + " (delivered as is)", true
	case errors.As(err, &de) && de.Attempts == 0:
		return "DeferredError at the gate (nothing sent)", true
	case errors.As(err, &de):
		return "DeferredError: " + de.Reason, true
	case errors.Is(err, syscall.ECONNRESET):
		return "error: connection reset", true
	case errors.Is(err, syscall.EPIPE):
		return "error: broken pipe", true
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "error: EOF (connection closed)", true
	case errors.Is(err, net.ErrClosed):
		return "error: use of closed connection (server reset it mid-request)", true
	case errors.Is(err, context.DeadlineExceeded):
		return "error: context deadline exceeded", true
	case strings.Contains(err.Error(), "server closed"), strings.Contains(err.Error(), "connection reset"):
		return "error: connection closed by server", true
	}
	return "error: " + err.Error(), false
}

// soakRequest is one logical call the load makes.
type soakRequest struct {
	method, path, key string
	body              []byte
	buffered          bool // a plain reader heed must buffer, not GetBody
	short             bool
}

func soakPlan(rng *rand.Rand, worker, n int) soakRequest {
	q := soakRequest{method: http.MethodGet, path: fmt.Sprintf("/l%02d/items/%d", worker, n)}
	switch x := rng.IntN(100); {
	case x < 40:
	case x < 70:
		q.method = http.MethodPut
	default:
		q.method = http.MethodPost
		if rng.IntN(2) == 0 {
			q.key = fmt.Sprintf("key-%d", n)
		}
	}
	if q.method != http.MethodGet {
		q.body = make([]byte, rng.IntN(16<<10))
		for i := range q.body {
			q.body[i] = byte(rng.Uint32())
		}
		q.buffered = rng.IntN(2) == 0
	}
	if rng.IntN(100) == 0 {
		q.path = fmt.Sprintf("/absurd/%d", n)
	}
	q.short = rng.IntN(10) == 0
	return q
}

// plainReader hides every method but Read, so that heed buffers it.
type plainReader struct{ r io.Reader }

func (p *plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: run without -short")
	}
	ignore := goleak.IgnoreCurrent()
	began := time.Now()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("HEED_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "HEED_SOAK_SEED")
		seed = n
	}
	t.Logf("seed %d (set HEED_SOAK_SEED to replay the same plan)", seed)

	srvState := newSoakServer(seed)
	srv := httptest.NewUnstartedServer(srvState)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			srvState.newConns.Add(1)
		}
	}
	srv.Start()
	serverClosed := false
	defer func() {
		if !serverClosed {
			srv.Close()
		}
	}()
	require.True(t, strings.HasPrefix(srv.Listener.Addr().String(), "127.0.0.1:"))
	fdStart := openFDs(t)

	base := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConns:        2 * soakWorkers,
		MaxIdleConnsPerHost: soakWorkers,
		IdleConnTimeout:     30 * time.Second,
	}
	spy := &soakSpy{next: base, notBefore: map[string]time.Time{}, endless: map[string]soakRecv{}}
	policy := func(name string) heed.Policy {
		return heed.Policy{
			Name: name, Scope: name, MinWait: soakMinWait, MaxWait: soakMaxWait,
			Jitter: 2 * time.Millisecond, Backoff: heed.EqualJitter(soakMinWait, 40*time.Millisecond),
		}
	}
	opts := []heed.Option{heed.WithRoute("/absurd/", policy("absurd"))}
	for w := range soakWorkers {
		name := fmt.Sprintf("l%02d", w)
		opts = append(opts, heed.WithRoute("/"+name+"/", policy(name)))
	}
	var decMu sync.Mutex
	decisions := map[string]int{}
	opts = append(opts, heed.WithObserver(func(e heed.Event) {
		var k string
		switch e.Kind {
		case heed.EventRetry:
			k = "retry after " + e.Source
		case heed.EventGateWait:
			k = "wait at the gate"
		case heed.EventGiveUp:
			k = "give up: " + e.Stop
		case heed.EventBudget:
			k = "retry refused by the retry budget"
		case heed.EventDeferred:
			k = "defer: " + e.Reason
		default:
			return
		}
		decMu.Lock()
		decisions[k]++
		decMu.Unlock()
	}))
	tr := heed.New(spy, opts...)
	client := &http.Client{Transport: tr}

	// Sample the heap while the load runs.
	var peakHeap atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	var (
		next      atomic.Int64
		outMu     sync.Mutex
		outcomes  = map[string]int{}
		bad       []string
		absurdOut = map[string]int{}
		wg        sync.WaitGroup
	)
	for w := range soakWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)+2))
			for {
				n := int(next.Add(1))
				if n > soakCalls || time.Since(began) > soakWall {
					return
				}
				q := soakPlan(rng, w, n)
				out, problem := soakOne(client, spy, srv.URL, n, q)
				outMu.Lock()
				outcomes[out]++
				if strings.HasPrefix(q.path, "/absurd/") {
					absurdOut[out]++
				}
				if problem != "" {
					bad = append(bad, problem)
				}
				outMu.Unlock()
			}
		}()
	}
	wg.Wait()
	loadTook := time.Since(began)
	close(stopSampling)
	<-sampled
	require.Less(t, loadTook, soakWall, "the load did not finish in time")

	// Every connection closes: the file descriptors return to their count.
	tr.CloseIdleConnections()
	fdEnd := openFDs(t)
	for deadline := time.Now().Add(5 * time.Second); fdEnd > fdStart && time.Now().Before(deadline); fdEnd = openFDs(t) {
		time.Sleep(20 * time.Millisecond)
		tr.CloseIdleConnections()
	}
	srv.Close()
	serverClosed = true
	srvState.handlers.Wait()
	leaked := 0
	if err := goleak.Find(ignore); err != nil {
		leaked = strings.Count(err.Error(), "\ngoroutine ") + 1
		t.Errorf("goroutines leaked: %v", err)
	}

	// Drains: bounded in bytes and time, for every discarded body.
	var maxDrainBytes int64
	var maxDrain time.Duration
	var drainBad []string
	var unclosed []string
	for _, b := range spy.all {
		if !b.closed.Load() {
			unclosed = append(unclosed, fmt.Sprintf("%s (delivered %v)", b.fault, b.delivered.Load()))
		}
	}
	for _, d := range spy.discards {
		maxDrainBytes = max(maxDrainBytes, d.read.Load())
		maxDrain = max(maxDrain, d.closedIn)
		if d.read.Load() > soakDrainBytes || d.closedIn > soakDrainTime+soakSlack {
			drainBad = append(drainBad, fmt.Sprintf("%s: read %d bytes, closed after %v", d.fault, d.read.Load(), d.closedIn))
		}
	}

	s := srvState
	s.mu.Lock()
	defer s.mu.Unlock()
	newConns := s.newConns.Load()
	perReq := float64(newConns) / float64(s.attempts)
	early := len(s.early) + len(spy.early)

	var b strings.Builder
	fmt.Fprintf(&b, "\n| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| calls (64 goroutines, one Transport) | %d |\n", soakCalls)
	fmt.Fprintf(&b, "| requests the server received | %d |\n", s.attempts)
	fmt.Fprintf(&b, "| wall time | %v |\n", loadTook.Round(10*time.Millisecond))
	fmt.Fprintf(&b, "| early retries (server or wire) | %d |\n", early)
	fmt.Fprintf(&b, "| keyless POSTs applied twice | %d |\n", s.dupWrites)
	fmt.Fprintf(&b, "| replayed bodies that differ | %d |\n", s.replayDiffers+s.sumMismatch)
	fmt.Fprintf(&b, "| keyed writes answered from their key | %d |\n", s.keyDedup)
	fmt.Fprintf(&b, "| leaked goroutines | %d |\n", leaked)
	fmt.Fprintf(&b, "| leaked file descriptors | %d |\n", max(fdEnd-fdStart, 0))
	fmt.Fprintf(&b, "| new connections per request | %d / %d = %.3f |\n", newConns, s.attempts, perReq)
	fmt.Fprintf(&b, "| peak heap in use | %.1f MiB |\n", float64(peakHeap.Load())/(1<<20))
	fmt.Fprintf(&b, "| response bodies left open | %d |\n", len(unclosed))
	fmt.Fprintf(&b, "| discarded bodies: %d; most read, longest to close | %d bytes, %v |\n", len(spy.discards), maxDrainBytes, maxDrain.Round(time.Millisecond))
	fmt.Fprintf(&b, "| endless body to its retry, beyond the hint (most) | %v |\n", spy.maxStall.Round(time.Millisecond))
	fmt.Fprintf(&b, "\n| fault injected | count |\n|---|---|\n")
	for _, f := range append(slices.Clone(soakFaults), soakFault{name: soakAbsurd}) {
		fmt.Fprintf(&b, "| %s | %d |\n", f.name, s.faults[f.name])
	}
	fmt.Fprintf(&b, "\n| outcome of a call | count |\n|---|---|\n")
	total := 0
	for _, k := range slices.Sorted(maps.Keys(outcomes)) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, outcomes[k])
		total += outcomes[k]
	}
	fmt.Fprintf(&b, "\n| heed's decision | count |\n|---|---|\n")
	decMu.Lock()
	for _, k := range slices.Sorted(maps.Keys(decisions)) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, decisions[k])
	}
	decMu.Unlock()
	t.Log(b.String())

	assert.Equal(t, soakCalls, total, "every call ends")
	assert.Empty(t, bad, "calls that ended without saying what happened, or broke a promise")
	assert.Empty(t, s.early, "the server saw a retry before the instant it asked for")
	assert.Empty(t, spy.early, "heed sent a retry before the server's instant")
	assert.Zero(t, s.dupWrites, "a keyless POST was applied twice")
	assert.Zero(t, s.sumMismatch, "a body differs from its sha256")
	assert.Zero(t, s.replayDiffers, "a replayed body differs from the first sending")
	assert.LessOrEqual(t, fdEnd, fdStart, "file descriptors left open")
	assert.LessOrEqual(t, perReq, soakConnBound, "connections are not reused")
	assert.Less(t, peakHeap.Load(), uint64(soakHeapBound), "heap")
	assert.Empty(t, drainBad, "a discarded body was drained past its bounds")
	assert.Empty(t, unclosed, "response bodies never closed")
	assert.Empty(t, spy.stalls, "an endless body stalled a retry")
	for out := range absurdOut {
		assert.True(t, strings.HasPrefix(out, "DeferredError"), "an /absurd/ call ended in %q", out)
	}
	for name, n := range s.faults {
		if name != soakAbsurd {
			assert.Positive(t, n, name)
		}
	}
}

// soakOne makes one call and checks what it can at once: the body replays
// and deferrals. It returns the outcome and a problem, if any.
func soakOne(client *http.Client, spy *soakSpy, base string, n int, q soakRequest) (string, string) {
	timeout := soakCallTime
	if q.short {
		timeout = soakShortCtx
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body io.Reader
	if q.body != nil {
		body = bytes.NewReader(q.body)
		if q.buffered {
			body = &plainReader{bytes.NewReader(q.body)}
		}
	}
	req, err := http.NewRequestWithContext(ctx, q.method, base+q.path, body)
	if err != nil {
		return "error: " + err.Error(), err.Error()
	}
	id := strconv.Itoa(n)
	req.Header.Set(hCallID, id)
	if q.body != nil {
		sum := sha256.Sum256(q.body)
		req.Header.Set(hBodySum, hex.EncodeToString(sum[:]))
	}
	if q.key != "" {
		req.Header.Set("Idempotency-Key", q.key)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if resp != nil {
		spy.delivered(resp)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 2<<20))
		resp.Body.Close()
	}
	out, clear := soakOutcome(resp, err)
	if !clear {
		return out, fmt.Sprintf("call %s (%s %s): %v", id, q.method, q.path, err)
	}
	var de *heed.DeferredError
	if errors.As(err, &de) {
		switch {
		case de.RetryAt.Before(start):
			return out, fmt.Sprintf("call %s: RetryAt %v before the call began", id, de.RetryAt)
		case de.RetryAt.Before(spy.notBeforeOf(id)):
			return out, fmt.Sprintf("call %s: RetryAt %v before the server's instant %v", id, de.RetryAt, spy.notBeforeOf(id))
		case de.URL != base+q.path:
			return out, fmt.Sprintf("call %s: DeferredError URL %q", id, de.URL)
		}
	}
	return out, ""
}
