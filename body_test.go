package heed_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// readerAtBody is a request body that is an io.ReaderAt of known size.
type readerAtBody struct {
	*strings.Reader
	closeCounter
}

func (b *readerAtBody) Read(p []byte) (int, error) { return b.Reader.Read(p) }

func TestBodyClosedExactlyOnce(t *testing.T) {
	big := strings.Repeat("b", heed.DefaultBodyBuffer+10)
	kinds := []struct {
		name string
		make func() (*http.Request, func() int)
	}{
		{"buffered", func() (*http.Request, func() int) {
			b := newCloseCounter("small body")
			return mustReq("PUT", b), b.closes
		}},
		{"past the bound", func() (*http.Request, func() int) {
			b := newCloseCounter(big)
			return mustReq("PUT", b), b.closes
		}},
		{"GetBody", func() (*http.Request, func() int) {
			b := newCloseCounter("with getbody")
			r := mustReq("PUT", b)
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("with getbody")), nil }
			return r, b.closes
		}},
		{"ReaderAt", func() (*http.Request, func() int) {
			b := &readerAtBody{Reader: strings.NewReader("reader at")}
			return mustReq("PUT", b), b.closes
		}},
	}
	paths := []struct {
		name    string
		policy  heed.Policy
		gate    time.Duration // hold the gate this long first
		replies []reply
	}{
		{"first attempt succeeds", heed.Policy{}, 0, []reply{ok200}},
		{"retried then succeeds", heed.Policy{}, 0, []reply{tooMany("Retry-After", "1"), ok200}},
		{"deferred after an attempt", heed.Policy{}, 0, []reply{tooMany("Retry-After", "600")}},
		{"deferred by the gate before sending", heed.Policy{}, time.Hour, []reply{ok200}},
		{"MaxAttempts 1", heed.Policy{MaxAttempts: 1}, 0, []reply{tooMany("Retry-After", "1")}},
		{"MaxAttempts 1 deferred by the gate", heed.Policy{MaxAttempts: 1}, time.Hour, []reply{ok200}},
		{"transport error", heed.Policy{MaxAttempts: 2}, 0, []reply{{err: resetErr}}},
	}
	for _, k := range kinds {
		for _, p := range paths {
			t.Run(k.name+"/"+p.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					gate := heed.NewGate()
					if p.gate > 0 {
						require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(p.gate)))
					}
					req, closes := k.make()
					resp, _ := heed.New(script(p.replies...), heed.WithPolicy(exact(p.policy)), heed.WithGate(gate)).RoundTrip(req)
					if resp != nil {
						resp.Body.Close()
					}
					assert.Equal(t, 1, closes())
				})
			})
		}
	}
}

func mustReq(method string, body io.Reader) *http.Request {
	req, err := http.NewRequestWithContext(context.Background(), method, "https://api.example/up", body)
	if err != nil {
		panic(err)
	}
	return req
}

func TestBodyReplay(t *testing.T) {
	tests := []struct {
		name string
		body func() io.Reader
		want string
	}{
		{"strings.Reader (GetBody)", func() io.Reader { return strings.NewReader("alpha") }, "alpha"},
		{"plain reader buffered", func() io.Reader { return io.MultiReader(strings.NewReader("be"), strings.NewReader("ta")) }, "beta"},
		{"ReaderAt without GetBody", func() io.Reader { return &readerAtBody{Reader: strings.NewReader("gamma")} }, "gamma"},
		{"empty plain reader", func() io.Reader { return io.MultiReader() }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(boom500, boom500, ok200)
				resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{}))).RoundTrip(newRequest(t, t.Context(), "PUT", "https://api.example/", tt.body()))
				require.NoError(t, err)
				resp.Body.Close()
				s := rt.requests()
				require.Len(t, s, 3)
				for _, r := range s {
					assert.Equal(t, tt.want, string(r.body))
				}
			})
		})
	}
}

func TestBodyPastBoundStreamsWhole(t *testing.T) {
	big := strings.Repeat("0123456789", heed.DefaultBodyBuffer/5)
	rt := script(tooMany("Retry-After", "1"))
	resp, err := heed.New(rt).RoundTrip(newRequest(t, t.Context(), "PUT", "https://api.example/", io.MultiReader(strings.NewReader(big))))
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, rt.requests(), 1, "sent once, not retried")
	assert.Equal(t, big, string(rt.requests()[0].body), "every byte is sent")
}

func TestBodyFileFromItsOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "f")
		require.NoError(t, os.WriteFile(path, []byte("headerPAYLOAD"), 0o600))
		f, err := os.Open(path)
		require.NoError(t, err)
		_, err = f.Seek(6, io.SeekStart)
		require.NoError(t, err)
		rt := script(boom500, ok200)
		resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{}))).RoundTrip(newRequest(t, t.Context(), "PUT", "https://api.example/", f))
		require.NoError(t, err)
		resp.Body.Close()
		for _, s := range rt.requests() {
			assert.Equal(t, "PAYLOAD", string(s.body))
			assert.Equal(t, int64(7), s.req.ContentLength)
		}
		_, err = f.Read(make([]byte, 1))
		assert.True(t, errors.Is(err, os.ErrClosed), "the caller's file is closed")
	})
}

func TestBodyBufferReadError(t *testing.T) {
	b := &failingBody{}
	_, err := heed.New(script(ok200)).RoundTrip(newRequest(t, t.Context(), "PUT", "https://api.example/", b))
	require.ErrorIs(t, err, errDisk)
	assert.Equal(t, int32(1), b.closed.Load())
}

var errDisk = errors.New("disk on fire")

type failingBody struct{ closed atomic.Int32 }

func (*failingBody) Read([]byte) (int, error) { return 0, errDisk }
func (b *failingBody) Close() error           { b.closed.Add(1); return nil }

func TestBigFileUploadMemoryStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 2 GiB from a sparse file")
	}
	const size = 1 << 30
	path := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	f, err = os.Open(path)
	require.NoError(t, err)

	var got []int64
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n, err := io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		got = append(got, n)
		status := 200
		if len(got) == 1 {
			status = 503
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := heed.New(rt, heed.WithPolicy(heed.Policy{Backoff: heed.Constant(time.Millisecond)})).RoundTrip(newRequest(t, t.Context(), "PUT", "https://api.example/big", f))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, []int64{size, size}, got, "both attempts carry the whole file")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "the file is never copied into memory")
}

func TestWithBodyBuffer(t *testing.T) {
	tests := []struct {
		name   string
		bound  int64
		size   int
		replay bool
	}{
		{"raised bound replays 2 MiB", 4 << 20, 2 << 20, true},
		{"lowered bound sends once", 10, 11, false},
		{"at the bound replays", 10, 10, true},
		{"zero means the default", 0, heed.DefaultBodyBuffer, true},
		{"zero means the default, past it", 0, heed.DefaultBodyBuffer + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				body := strings.Repeat("z", tt.size)
				rt := script(boom500, ok200)
				tr := heed.New(rt, heed.WithBodyBuffer(tt.bound), heed.WithPolicy(exact(heed.Policy{})))
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "PUT", "https://api.example/", io.MultiReader(strings.NewReader(body))))
				require.NoError(t, err)
				resp.Body.Close()
				s := rt.requests()
				if !tt.replay {
					assert.Len(t, s, 1)
					return
				}
				require.Len(t, s, 2)
				for _, r := range s {
					assert.Equal(t, tt.size, len(r.body))
				}
			})
		})
	}
}

// TestGetBodyFailureHandsBackTheResponse: when the caller's GetBody fails
// on a retry, the caller gets the response or error already in hand, as it
// is, never heed's replay error; the response's body is still readable.
func TestGetBodyFailureHandsBackTheResponse(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		first      reply
		status     int   // 0: the transport error is handed back
		wantErr    error // with status 0
		sendsAfter int   // requests the inner transport saw
	}{
		{"503 with a hint", "POST", reply{status: 503, header: hdr("Retry-After", "1"), body: "down"}, 503, nil, 1},
		{"429 with a hint", "PUT", tooMany("Retry-After", "2"), 429, nil, 1},
		{"500 on a PUT", "PUT", boom500, 500, nil, 1},
		{"connection reset on a PUT", "PUT", reply{err: resetErr}, 0, resetErr, 1},
		{"connection refused on a POST", "POST", reply{err: refuseErr}, 0, refuseErr, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(tt.first, ok200)
				req := newRequest(t, t.Context(), tt.method, "https://api.example/v1/x", strings.NewReader("payload"))
				calls := 0
				req.GetBody = func() (io.ReadCloser, error) {
					calls++
					return nil, errDisk
				}
				resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{}))).RoundTrip(req)
				assert.Equal(t, 1, calls, "GetBody was asked once, for the second attempt")
				assert.Len(t, rt.requests(), tt.sendsAfter)
				if tt.status == 0 {
					assert.Nil(t, resp)
					assert.Equal(t, tt.wantErr, err, "the transport error as it is")
					return
				}
				require.NoError(t, err)
				require.NotNil(t, resp)
				assert.Equal(t, tt.status, resp.StatusCode)
				b, rerr := io.ReadAll(resp.Body)
				require.NoError(t, rerr)
				assert.Equal(t, tt.first.body, string(b))
				resp.Body.Close()
			})
		})
	}
}

// TestGetBodyOnlyForASend: GetBody is called for a retry that is sent,
// after the wait, never for one the context or the retry budget stops.
func TestGetBodyOnlyForASend(t *testing.T) {
	for _, name := range []string{"context ends in the wait", "retry budget refuses"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				rt := script(reply{status: 503, header: hdr("Retry-After", "5"), body: "down"}, ok200)
				rt.before = func(*http.Request) {
					if name == "context ends in the wait" {
						go func() { time.Sleep(time.Second); cancel() }()
					}
				}
				calls := 0
				req := newRequest(t, ctx, "PUT", "https://api.example/v1/x", strings.NewReader("payload"))
				req.GetBody = func() (io.ReadCloser, error) {
					calls++
					return io.NopCloser(strings.NewReader("payload")), nil
				}
				p := exact(heed.Policy{})
				if name == "retry budget refuses" {
					p.Budget = heed.Budget{Ratio: -1, MinPerSecond: -1}
				}
				resp, err := heed.New(rt, heed.WithPolicy(p)).RoundTrip(req)
				if resp != nil {
					resp.Body.Close()
				}
				if name == "context ends in the wait" {
					require.ErrorIs(t, err, context.Canceled)
				} else {
					require.NoError(t, err)
				}
				require.Len(t, rt.requests(), 1)
				assert.Zero(t, calls)
			})
		})
	}
}

// TestGetBodyAfterTheLastUploadEnds: a transport may go on reading an
// attempt's body after its response came back, as net/http does when a
// server answers before the upload ends. A GetBody that rewinds one shared
// reader must not be called while it does: it is called after the
// response is drained and the wait is over, so the retry sends every byte.
func TestGetBodyAfterTheLastUploadEnds(t *testing.T) {
	for _, size := range []int{4 << 10, 64 << 10, 256 << 10} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
				shared := &lockedReader{r: bytes.NewReader(payload)}
				var got [][]byte
				var mu sync.Mutex
				var n int
				inner := fixtureRT(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					n++
					first := n == 1
					mu.Unlock()
					if first {
						// Answer at once, and read the upload on in the
						// background, 1 KiB every 10ms, as a full-duplex
						// server and net/http's write loop do.
						go func() {
							buf := make([]byte, 1<<10)
							for {
								if _, err := r.Body.Read(buf); err != nil {
									break
								}
								time.Sleep(10 * time.Millisecond)
							}
							r.Body.Close()
						}()
						return &http.Response{StatusCode: 503, Header: hdr("Retry-After", "1"), Body: io.NopCloser(strings.NewReader("busy")), Request: r}, nil
					}
					b, _ := io.ReadAll(r.Body)
					r.Body.Close()
					mu.Lock()
					got = append(got, b)
					mu.Unlock()
					return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
				})
				req := newRequest(t, t.Context(), "PUT", "https://x.example/obj", io.NopCloser(shared))
				req.ContentLength = -1
				req.GetBody = func() (io.ReadCloser, error) {
					return io.NopCloser(shared), shared.rewind()
				}
				resp, err := heed.New(inner, heed.WithPolicy(exact(heed.Policy{MinWait: 4 * time.Second}))).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				synctest.Wait()
				require.Len(t, got, 1)
				assert.Equal(t, len(payload), len(got[0]), "the retry sends the whole body")
			})
		})
	}
}

// lockedReader is one reader shared by every attempt, which a GetBody
// rewinds; safe for concurrent use, as such a shared body must be.
type lockedReader struct {
	mu sync.Mutex
	r  *bytes.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

func (l *lockedReader) rewind() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.r.Seek(0, io.SeekStart)
	return err
}

// TestGetBodyFailureWithALongResponse: a response too long to keep through
// the wait (over the 64 KiB a retry drains) is discarded as every retried
// response is; when GetBody then fails, its error is all there is.
func TestGetBodyFailureWithALongResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := strings.Repeat("x", 64<<10+1)
		rt := script(reply{status: 503, header: hdr("Retry-After", "1"), body: long}, ok200)
		req := newRequest(t, t.Context(), "PUT", "https://api.example/v1/x", strings.NewReader("payload"))
		req.GetBody = func() (io.ReadCloser, error) { return nil, errDisk }
		resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{}))).RoundTrip(req)
		assert.Nil(t, resp)
		require.ErrorIs(t, err, errDisk)
		assert.Len(t, rt.requests(), 1)
		assert.Equal(t, 1, rt.bodies[0].closes(), "the long response was closed")
	})
}

func TestDesignCloneFromTheSecondAttempt(t *testing.T) {
	tests := []struct {
		name string
		body func() io.Reader
	}{
		{"no body", func() io.Reader { return nil }},
		{"GetBody", func() io.Reader { return strings.NewReader("payload") }},
		{"buffered", func() io.Reader { return io.MultiReader(strings.NewReader("payload")) }},
		{"ReaderAt", func() io.Reader { return &readerAtBody{Reader: strings.NewReader("payload")} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(boom500, boom500, ok200)
				req := newRequest(t, t.Context(), "PUT", "https://api.example/x", tt.body())
				resp, err := heed.New(rt, heed.WithPolicy(exact(heed.Policy{}))).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				s := rt.requests()
				require.Len(t, s, 3)
				for i := 1; i < len(s); i++ {
					assert.NotSame(t, req, s[i].req, "attempt %d is a clone", i+1)
					assert.NotSame(t, s[i-1].req, s[i].req, "attempt %d is a fresh clone", i+1)
					if s[i].req.Body != nil && s[i].req.Body != http.NoBody {
						assert.True(t, s[i-1].req.Body != s[i].req.Body, "attempt %d has a fresh body", i+1)
					}
					if tt.name != "no body" {
						assert.Equal(t, "payload", string(s[i].body))
					}
				}
			})
		})
	}
}

// The caller's body is closed exactly once, before RoundTrip returns, on
// the paths the other tests of this file leave out.
func TestDesignBodyClosedOnceOnEveryPath(t *testing.T) {
	big := strings.Repeat("b", heed.DefaultBodyBuffer+10)
	kinds := []struct {
		name string
		make func(ctx context.Context, method string) (*http.Request, func() int)
	}{
		{"buffered", func(ctx context.Context, m string) (*http.Request, func() int) {
			b := newCloseCounter("small body")
			r, _ := http.NewRequestWithContext(ctx, m, "https://api.example/up", b)
			return r, b.closes
		}},
		{"past the bound", func(ctx context.Context, m string) (*http.Request, func() int) {
			b := newCloseCounter(big)
			r, _ := http.NewRequestWithContext(ctx, m, "https://api.example/up", b)
			return r, b.closes
		}},
		{"GetBody", func(ctx context.Context, m string) (*http.Request, func() int) {
			b := newCloseCounter("with getbody")
			r, _ := http.NewRequestWithContext(ctx, m, "https://api.example/up", b)
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("with getbody")), nil }
			return r, b.closes
		}},
		{"ReaderAt", func(ctx context.Context, m string) (*http.Request, func() int) {
			b := &readerAtBody{Reader: strings.NewReader("reader at")}
			r, _ := http.NewRequestWithContext(ctx, m, "https://api.example/up", b)
			return r, b.closes
		}},
	}
	paths := []struct {
		name     string
		method   string
		policy   heed.Policy
		hold     time.Duration // the gate is held this long first
		cancelAt time.Duration // the context is canceled then
		cancelIn bool          // the context is canceled during the first send
		replies  []reply
	}{
		{"terminal response", "PUT", heed.Policy{}, 0, 0, false, []reply{{status: 401, body: "no"}}},
		{"give up: not replay-safe", "POST", heed.Policy{}, 0, 0, false, []reply{boom500}},
		{"give up: context done after the send", "PUT", heed.Policy{}, 0, 0, true, []reply{boom500}},
		{"context ends during the sleep", "PUT", heed.Policy{}, 0, 3 * time.Second, false, []reply{tooMany("Retry-After", "10")}},
		{"context ends during a gate wait", "PUT", heed.Policy{}, 10 * time.Second, 3 * time.Second, false, []reply{ok200}},
		{"retry budget refuses", "PUT", heed.Policy{Budget: heed.Budget{Ratio: -1, MinPerSecond: -1}}, 0, 0, false, []reply{boom500}},
		{"transport errors until attempts are used up", "PUT", heed.Policy{MaxAttempts: 3}, 0, 0, false, []reply{{err: refuseErr}}},
	}
	for _, k := range kinds {
		for _, p := range paths {
			t.Run(k.name+"/"+p.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if p.cancelAt > 0 {
						time.AfterFunc(p.cancelAt, cancel)
					}
					gate := heed.NewGate()
					if p.hold > 0 {
						require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(p.hold)))
					}
					rt := script(p.replies...)
					if p.cancelIn {
						rt.before = func(*http.Request) { cancel() }
					}
					req, closes := k.make(ctx, p.method)
					resp, _ := heed.New(rt, heed.WithPolicy(exact(p.policy)), heed.WithGate(gate)).RoundTrip(req)
					assert.Equal(t, 1, closes(), "closed once before RoundTrip returns")
					if resp != nil {
						resp.Body.Close()
					}
				})
			})
		}
	}
}

// With MaxAttempts 1 and a KeyHeader, a POST's body is still closed once.
func TestDesignBodyClosedOnceSingleAttemptWithKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCloseCounter("payload")
		req := newRequest(t, t.Context(), "POST", "https://api.example/x", b)
		rt := script(ok200)
		resp, err := heed.New(rt, heed.WithPolicy(heed.Policy{MaxAttempts: 1, KeyHeader: "Idempotency-Key"})).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, rt.requests(), 1)
		assert.Len(t, rt.requests()[0].header.Get("Idempotency-Key"), 36)
		assert.Equal(t, 1, b.closes())
	})
}

// nil, NoBody, GetBody and an io.ReaderAt of known size replay without
// being buffered: the buffer bound does not apply to them.
func TestDesignBodiesReplayWithoutBuffering(t *testing.T) {
	payload := strings.Repeat("p", 100)
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte(payload), 0o600))
	tests := []struct {
		name   string
		body   func(t *testing.T) io.Reader
		want   string
		replay bool
	}{
		{"nil", func(*testing.T) io.Reader { return nil }, "", true},
		{"NoBody", func(*testing.T) io.Reader { return http.NoBody }, "", true},
		{"GetBody", func(*testing.T) io.Reader { return strings.NewReader(payload) }, payload, true},
		{"ReaderAt of known size", func(*testing.T) io.Reader { return &readerAtBody{Reader: strings.NewReader(payload)} }, payload, true},
		{"*os.File", func(t *testing.T) io.Reader {
			f, err := os.Open(path)
			require.NoError(t, err)
			return f
		}, payload, true},
		{"other body past the bound (control)", func(*testing.T) io.Reader { return io.MultiReader(strings.NewReader(payload)) }, payload, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body(t)
			synctest.Test(t, func(t *testing.T) {
				rt := script(boom500, ok200)
				tr := heed.New(rt, heed.WithBodyBuffer(4), heed.WithPolicy(exact(heed.Policy{})))
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "PUT", "https://api.example/", body))
				require.NoError(t, err)
				resp.Body.Close()
				s := rt.requests()
				if !tt.replay {
					require.Len(t, s, 1)
					assert.Equal(t, tt.want, string(s[0].body), "sent once, whole")
					return
				}
				require.Len(t, s, 2)
				for _, r := range s {
					assert.Equal(t, tt.want, string(r.body))
				}
			})
		})
	}
}
