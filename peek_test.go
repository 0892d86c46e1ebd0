package heed_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// encode compresses s as a server does for Content-Encoding enc.
func encode(t testing.TB, enc, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip", "x-gzip", "GZIP":
		w = gzip.NewWriter(&b)
	case "deflate":
		w = zlib.NewWriter(&b)
	case "raw deflate":
		fw, err := flate.NewWriter(&b, flate.DefaultCompression)
		require.NoError(t, err)
		w = fw
	default:
		t.Fatalf("encoding %q", enc)
	}
	_, err := io.WriteString(w, s)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// TestPeekDecodesCompressedErrorBodies: a caller that asks for a compressed
// body itself (Accept-Encoding set by hand) gets it as the server sent it,
// and net/http does not decode it; the classifier reads it decoded all the
// same, and hands the caller every byte as it came.
func TestPeekDecodesCompressedErrorBodies(t *testing.T) {
	bodies := []struct {
		name   string
		status int
		ct     string
		body   string
		want   heed.Verdict
	}{
		{"openai insufficient_quota", 429, ctJSON, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, heed.Verdict{Class: heed.Terminal, Reason: "billing"}},
		{"problem quota-exceeded", 429, ctProblem, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota exceeded"}`, heed.Verdict{Class: heed.Terminal, Reason: "quota"}},
		{"github secondary rate limit", 403, ctJSON, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: time.Minute, Source: "GitHub secondary limit"}},
		{"s3 slow down", 503, "application/xml", `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`, heed.Verdict{Class: heed.Throttled, Reason: "slow down"}},
		{"long body, marker inside the first 4 KiB decoded", 429, ctJSON, `{"error":{"type":"insufficient_quota","pad":"` + strings.Repeat("x", 64<<10) + `"}}`, heed.Verdict{Class: heed.Terminal, Reason: "billing"}},
	}
	for _, enc := range []string{"gzip", "x-gzip", "GZIP", "deflate", "raw deflate"} {
		for _, b := range bodies {
			t.Run(enc+"/"+b.name, func(t *testing.T) {
				wire := encode(t, enc, b.body)
				header := strings.TrimPrefix(enc, "raw ")
				resp, _ := classifyResp(b.status, hdr("Content-Type", b.ct, "Content-Encoding", header), string(wire))
				req := newRequest(t, t.Context(), "POST", "https://api.example/v1/x", nil)
				assert.Equal(t, b.want, heed.DefaultClassifier(req, resp, nil))
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, wire, got, "the caller gets the body as it came, encoded")
			})
		}
	}
}

// TestPeekBodyDecodes: PeekBody returns at most n decoded bytes and leaves
// the encoded body whole, for a small body, a bomb, bytes that only claim to
// be compressed, a cut stream and an encoding it does not decode.
func TestPeekBodyDecodes(t *testing.T) {
	bomb := encode(t, "gzip", `{"error":"`+strings.Repeat("0", 32<<20)+`"}`)
	cut := encode(t, "gzip", `{"error":{"type":"insufficient_quota","message":"`+strings.Repeat("quota ", 2000)+`"}}`)
	cut = cut[:len(cut)/2]
	tests := []struct {
		name, enc string
		wire      []byte
		n         int
		want      string // the peek's prefix
		wantLen   int
	}{
		{"gzip", "gzip", encode(t, "gzip", "hello, world"), 4096, "hello, world", 12},
		{"gzip, n smaller than the body", "gzip", encode(t, "gzip", "hello, world"), 20, "hello", -1},
		{"gzip, n smaller than the header", "gzip", encode(t, "gzip", "hello, world"), 5, "", 0},
		{"bomb", "gzip", bomb, 4096, `{"error":"000`, 4096},
		{"not really gzip", "gzip", []byte(`{"error":"insufficient_quota"}`), 4096, `{"error":"insufficient_quota"}`, 30},
		{"cut stream", "gzip", cut, 4096, `{"error":{"type":"`, -1},
		{"zlib", "deflate", encode(t, "deflate", "zlib body"), 4096, "zlib body", 9},
		{"raw deflate", "deflate", encode(t, "raw deflate", "bare body"), 4096, "bare body", 9},
		{"brotli is left as it came", "br", []byte{0x1b, 0x03, 0x00}, 4096, "\x1b\x03\x00", 3},
		{"two encodings are left as they came", "gzip, gzip", []byte("xyz"), 4096, "xyz", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := classifyResp(429, hdr("Content-Encoding", tt.enc), string(tt.wire))
			if tt.name == "two encodings are left as they came" {
				resp.Header["Content-Encoding"] = []string{"gzip", "gzip"}
			}
			peek, err := heed.PeekBody(resp, tt.n)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(peek), tt.n)
			if tt.wantLen >= 0 {
				assert.Len(t, peek, tt.wantLen)
			} else {
				assert.NotEmpty(t, peek, "what decodes before the cut")
			}
			assert.True(t, strings.HasPrefix(string(peek), tt.want), "peek %.60q", peek)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.wire, got, "the body is left whole, as it came")
		})
	}
}

// TestCompressedQuotaErrorIsSentOnce runs the finding end to end: a real
// server on loopback answers a gzip-encoded insufficient_quota 429 to a
// caller that set Accept-Encoding: gzip itself. heed classifies it as
// billing and sends once; the caller reads the compressed bytes.
func TestCompressedQuotaErrorIsSentOnce(t *testing.T) {
	body := `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
	wire := encode(t, "gzip", body)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Accept-Encoding") == "gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(429)
			_, _ = w.Write(wire)
			return
		}
		w.WriteHeader(429)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	inner := &http.Transport{}
	defer inner.CloseIdleConnections()
	client := &http.Client{Transport: heed.New(inner, heed.WithPolicy(heed.Policy{MaxWait: 50 * 1e6}))}

	req := newRequest(t, t.Context(), "POST", srv.URL+"/v1/images", strings.NewReader(`{"prompt":"x"}`))
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Idempotency-Key", "k-1")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, wire, got, "compressed, untouched")
	assert.Equal(t, int32(1), hits.Load(), "billing: sent once")
}

// FuzzPeekBody: whatever the bytes and the encoding claimed, PeekBody
// returns at most n bytes and the body still yields every byte as it came.
func FuzzPeekBody(f *testing.F) {
	f.Add("gzip", encode(f, "gzip", `{"error":{"type":"insufficient_quota"}}`), 4096)
	f.Add("deflate", encode(f, "deflate", "<Code>SlowDown</Code>"), 4096)
	f.Add("deflate", encode(f, "raw deflate", "bare"), 16)
	f.Add("x-gzip", []byte("\x1f\x8b\x08\x00garbage"), 64)
	f.Add("", []byte("plain"), 3)
	f.Fuzz(func(t *testing.T, enc string, wire []byte, n int) {
		n %= 1 << 16
		resp := &http.Response{StatusCode: 429, Header: http.Header{"Content-Encoding": {enc}}, Body: io.NopCloser(bytes.NewReader(wire))}
		peek, err := heed.PeekBody(resp, n)
		if err != nil {
			t.Fatalf("PeekBody: %v", err)
		}
		if len(peek) > max(n, 0) {
			t.Fatalf("peeked %d bytes, n %d", len(peek), n)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, wire) {
			t.Fatalf("body changed: %v", err)
		}
	})
}

// TestPlainBodyLabelledDeflate: a plain body under Content-Encoding:
// deflate (a server or middleware that decoded and kept the header) is read
// as it came, so an insufficient_quota 429 is still billing, sent once.
func TestPlainBodyLabelledDeflate(t *testing.T) {
	for _, body := range []string{
		`{"error":{"code":"insufficient_quota"}}`,
		"\n{\"error\":{\"code\":\"insufficient_quota\"}}",
		`  {"error":{"type":"insufficient_quota"}}`,
	} {
		for _, enc := range []string{"deflate", "gzip", "x-gzip"} {
			t.Run(enc+"/"+strconv.Quote(body[:3]), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rt := script(reply{status: 429, header: hdr("Content-Type", ctJSON, "Content-Encoding", enc), body: body})
					resp, err := heed.New(rt).RoundTrip(newRequest(t, t.Context(), "POST", "https://api.example/v1/chat", strings.NewReader("{}")))
					require.NoError(t, err)
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					assert.Equal(t, body, string(got))
					assert.Len(t, rt.requests(), 1, "billing: sent once")
				})
			})
		}
	}
}
