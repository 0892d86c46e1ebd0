package heed_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/link"
)

// reply is one scripted answer of a fakeRT: a response, or an error.
type reply struct {
	status int
	header http.Header
	body   string
	err    error
}

// sent is what a fakeRT saw of one request.
type sent struct {
	at     time.Time
	method string
	url    string
	header http.Header
	body   []byte
	req    *http.Request
}

// fakeRT is an in-memory RoundTripper that answers from a script, repeating
// the last reply when the script runs out, and records every request.
type fakeRT struct {
	mu      sync.Mutex
	replies []reply
	sent    []sent
	bodies  []*trackedBody // response bodies handed out
	// before runs at each request, before the reply is chosen.
	before func(r *http.Request)
}

func script(replies ...reply) *fakeRT { return &fakeRT{replies: replies} }

func (f *fakeRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.before != nil {
		f.before(r)
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, sent{at: time.Now(), method: r.Method, url: r.URL.String(), header: r.Header.Clone(), body: body, req: r})
	i := min(len(f.sent)-1, len(f.replies)-1)
	rep := f.replies[i]
	if rep.err != nil {
		return nil, rep.err
	}
	h := rep.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	tb := &trackedBody{Reader: strings.NewReader(rep.body)}
	f.bodies = append(f.bodies, tb)
	return &http.Response{
		StatusCode: rep.status, Status: http.StatusText(rep.status), Header: h,
		Body: tb, ContentLength: int64(len(rep.body)), Request: r,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

func (f *fakeRT) requests() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.sent...)
}

// gaps returns the times between consecutive requests.
func (f *fakeRT) gaps() []time.Duration {
	s := f.requests()
	var g []time.Duration
	for i := 1; i < len(s); i++ {
		g = append(g, s[i].at.Sub(s[i-1].at))
	}
	return g
}

// trackedBody is a response body that counts reads to the end and closes.
type trackedBody struct {
	io.Reader
	mu     sync.Mutex
	closed int
}

func (b *trackedBody) Close() error {
	b.mu.Lock()
	b.closed++
	b.mu.Unlock()
	return nil
}

func (b *trackedBody) closes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// closeCounter is a request body that counts its Close calls.
type closeCounter struct {
	io.Reader
	mu     sync.Mutex
	closed int
}

func newCloseCounter(s string) *closeCounter { return &closeCounter{Reader: strings.NewReader(s)} }

func (c *closeCounter) Close() error {
	c.mu.Lock()
	c.closed++
	c.mu.Unlock()
	return nil
}

func (c *closeCounter) closes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func newRequest(t testing.TB, ctx context.Context, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	require.NoError(t, err)
	return req
}

// observed returns a logger that records every line at debug and above.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// readBody reads and closes a response body.
func readBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	var b bytes.Buffer
	_, err := io.Copy(&b, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return b.String()
}

// designPlainGate is a Gate with only the two methods of the Gate interface,
// backed by heed's own gate: a user's gate that knows nothing of quotas.
type designPlainGate struct{ g heed.Gate }

func (p designPlainGate) NotBefore(ctx context.Context, scope string) (time.Time, error) {
	return p.g.NotBefore(ctx, scope)
}

func (p designPlainGate) Hold(ctx context.Context, scope string, until time.Time) error {
	return p.g.Hold(ctx, scope, until)
}

// withDeadline returns ctx with a timeout of d, or ctx itself when d is 0.
func withDeadline(t *testing.T, ctx context.Context, d time.Duration) context.Context {
	if d == 0 {
		return ctx
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}

// policyOf returns the policy tr applies to req, every default filled in.
func policyOf(tr *heed.Transport, req *http.Request) heed.Policy {
	return link.Policy(tr, req).(heed.Policy)
}

// checkClassified asserts that classify gives want for a response of
// status, h and body, and leaves the body whole, closing the original once.
func checkClassified(t *testing.T, classify heed.Classifier, status int, h http.Header, body string, want heed.Verdict) {
	t.Helper()
	resp, tb := classifyResp(status, h, body)
	assert.Equal(t, want, classify(nil, resp, nil))
	assert.Equal(t, body, readBody(t, resp), "the body is whole")
	assert.Equal(t, 1, tb.closes())
}
