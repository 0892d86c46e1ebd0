package heed

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fuzzHeader builds a header from lines "Key: value" separated by "\n"; a
// line without a colon is a key with an empty value. Keys are canonicalized
// as net/http does when it reads a response.
func fuzzHeader(block string) http.Header {
	h := http.Header{}
	if block == "" {
		return h
	}
	for _, line := range strings.Split(block, "\n") {
		k, v, _ := strings.Cut(line, ":")
		h.Add(strings.TrimSpace(k), strings.TrimLeft(v, " \t"))
	}
	return h
}

// countingBody is a response body that counts the bytes read from it and
// its Close calls.
type countingBody struct {
	r      io.Reader
	read   int
	closes int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

func (b *countingBody) Close() error { b.closes++; return nil }

// classifierReasons is every Reason DefaultClassifier may give, by class.
var classifierReasons = map[Class][]string{
	Deliver:   {"ok", "canceled"},
	Terminal:  {"billing", "quota", "forbidden", "unauthorized", "not found", "unprocessable", "client error", "not implemented", "version not supported", "should not retry", "host not found", "tls verification", "unsupported scheme", "too many redirects"},
	Throttled: {"rate limited", "unavailable", "slow down", "overloaded"},
	Transient: {"request timeout", "too early", "in progress", "should retry", "connection refused", "dial failed", "dns error"},
	Ambiguous: {"server error", "timeout", "connection reset", "eof", "transport error"},
}

// shouldRetryFalse reports whether h says Stripe-Should-Retry or
// x-should-retry: false, the override that wins over every status.
func shouldRetryFalse(h http.Header) bool {
	for _, k := range []string{"Stripe-Should-Retry", "X-Should-Retry"} {
		for _, v := range h[k] {
			if strings.EqualFold(strings.TrimSpace(v), "false") {
				return true
			}
		}
	}
	return false
}

func shouldRetryTrue(h http.Header) bool {
	for _, k := range []string{"Stripe-Should-Retry", "X-Should-Retry"} {
		for _, v := range h[k] {
			if strings.EqualFold(strings.TrimSpace(v), "true") {
				return true
			}
		}
	}
	return false
}

// FuzzDefaultClassifier feeds DefaultClassifier random statuses, header
// blocks, bodies (JSON or not), methods and idempotency keys, and random
// transport errors. Properties: no panic; a known class with one of its
// documented reasons; the same verdict twice; the body read at most 4 KiB,
// only for 429, 403, 400 (an AWS throttle's code) and 503, and left whole for the caller with its Close
// reaching the original once; the status table and the should-retry
// overrides hold.
func FuzzDefaultClassifier(f *testing.F) {
	f.Add(429, "Content-Type: application/json", []byte(`{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}`), "POST", false, "")
	f.Add(429, "Content-Type: application/problem+json", []byte(`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded"}`), "GET", false, "")
	f.Add(429, "Content-Type: application/problem+json\nRetry-After: 5", []byte(`{"type":"x#quota-exceeded"}`), "GET", false, "")
	f.Add(403, "Content-Type: application/json", []byte(`{"message":"You have exceeded a secondary rate limit."}`), "GET", false, "")
	f.Add(403, "X-RateLimit-Remaining: 0", []byte(""), "GET", false, "")
	f.Add(503, "Content-Type: application/xml", []byte(`<Error><Code>SlowDown</Code></Error>`), "PUT", false, "")
	f.Add(500, "Stripe-Should-Retry: false", []byte(`{}`), "POST", true, "")
	f.Add(400, "x-should-retry: true", []byte(`{}`), "POST", true, "")
	f.Add(400, "Content-Type: application/x-amz-json-1.0", []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}`), "POST", false, "")
	f.Add(409, "", []byte(`{}`), "POST", true, "")
	f.Add(200, "Content-Type: application/json", []byte(`{"ok":true}`), "GET", false, "")
	f.Add(429, "", []byte(`{"error":"insufficient_quota"`), "GET", false, "")
	f.Add(429, "Content-Type: text/plain", []byte(`  {"type": "quota-exceeded"`), "GET", false, "")
	f.Add(0, "", []byte(nil), "", false, "read tcp: connection reset by peer")
	f.Add(-1, "", []byte(nil), "GET", false, "unsupported protocol scheme")
	f.Fuzz(func(t *testing.T, status int, headers string, body []byte, method string, withKey bool, errMsg string) {
		req := &http.Request{Method: method, Header: http.Header{}}
		if withKey {
			req.Header.Set("Idempotency-Key", "k-1")
		}
		h := fuzzHeader(headers)
		cb := &countingBody{r: bytes.NewReader(body)}
		resp := &http.Response{StatusCode: status, Header: h, Body: cb, ContentLength: int64(len(body))}
		v := DefaultClassifier(req, resp, nil)
		checkVerdict(t, v)

		// Read at most 4 KiB, only where the body can change the verdict.
		if cb.read > classifyPeekLimit {
			t.Fatalf("status %d: read %d bytes of the body", status, cb.read)
		}
		peeked := cb.read
		if peeked > 0 && status != 429 && status != 403 && status != 503 && status != 400 {
			t.Fatalf("status %d: read the body", status)
		}
		// The body is whole for the caller, and closing it closes ours once.
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("status %d: body after classify = %q, %v; want %q", status, got, err, body)
		}
		if err := resp.Body.Close(); err != nil || cb.closes != 1 {
			t.Fatalf("close: %v, %d closes", err, cb.closes)
		}

		// The same input gives the same verdict, also without a request.
		again := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body))}
		if v2 := DefaultClassifier(req, again, nil); v2 != v {
			t.Fatalf("verdict %v then %v", v, v2)
		}
		noReq := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body))}
		checkVerdict(t, DefaultClassifier(nil, noReq, nil))

		// The table.
		switch {
		case shouldRetryFalse(h):
			if v != (Verdict{Class: Terminal, Reason: "should not retry"}) {
				t.Fatalf("status %d with should-retry false: %v", status, v)
			}
		case status < 400:
			if v != (Verdict{Class: Deliver, Reason: "ok"}) {
				t.Fatalf("status %d: %v", status, v)
			}
			if peeked != 0 {
				t.Fatalf("status %d: read the body", status)
			}
		case v.Class == Throttled:
			switch status {
			case 429, 403, 503, 529, 400: // 400: an AWS throttle's code
			default:
				t.Fatalf("status %d throttled", status)
			}
		case shouldRetryTrue(h):
			if v.Class != Transient || v.Reason != "should retry" { // a body's wait, if any, kept
				t.Fatalf("status %d with should-retry true: %v", status, v)
			}
		case status == 503 || status == 529:
			t.Fatalf("status %d: %v", status, v)
		case status >= 500 && status != 501 && status != 505:
			if v != (Verdict{Class: Ambiguous, Reason: "server error"}) {
				t.Fatalf("status %d: %v", status, v)
			}
		}

		// Transport errors with the fuzzed text, bare and as a net.OpError.
		if errMsg != "" {
			checkVerdict(t, DefaultClassifier(req, nil, errors.New(errMsg)))
			checkVerdict(t, DefaultClassifier(nil, nil, &net.OpError{Op: method, Net: "tcp", Err: errors.New(errMsg)}))
		}
	})
}

func checkVerdict(t *testing.T, v Verdict) {
	t.Helper()
	reasons, ok := classifierReasons[v.Class]
	if !ok {
		t.Fatalf("unknown class %v", v.Class)
	}
	for _, r := range reasons {
		if r == v.Reason {
			return
		}
	}
	t.Fatalf("class %v with undocumented reason %q", v.Class, v.Reason)
}

// mib is a 1 MiB header value of one repeated byte.
func mib(c byte) string { return strings.Repeat(string(c), 1<<20) }

// TestParsersBoundedOnHugeValues gives every parser 1 MiB header values:
// ParseRetryAfter, Hint and quota reject them without allocating and
// without reading them (a value over 128 bytes is rejected before any
// work); DefaultClassifier reads at most 4 KiB of a body and allocates
// little whatever the headers hold; a 1 MiB route pattern is rejected or
// compiled in bounded time.
func TestParsersBoundedOnHugeValues(t *testing.T) {
	huge := []string{mib('9'), mib(' '), "Sun, 06 Nov 1994 08:49:37 GMT" + mib(' '), strings.Repeat(`"a";r=0;t=3,`, 1<<20/12)}
	keys := []string{hdrRetryAfter, hdrRetryAfterMs, hdrMsRetryAfterMs, hdrRateLimit, hdrRateLimitReset, hdrRateLimitRemaining, hdrXRemaining, hdrXReset, hdrRemainingRequests, hdrResetRequests}

	t.Run("ParseRetryAfter", func(t *testing.T) {
		for _, v := range huge {
			start := time.Now()
			allocs := testing.AllocsPerRun(20, func() {
				if d, ok := ParseRetryAfter(v, raNow); ok || d != 0 {
					t.Fatalf("accepted a %d-byte value", len(v))
				}
			})
			assert.Zero(t, allocs)
			assert.Less(t, time.Since(start), 2*time.Second)
		}
	})

	t.Run("Hint and quota", func(t *testing.T) {
		for _, v := range huge {
			h := http.Header{}
			for _, k := range keys {
				h[k] = []string{v}
			}
			h[hdrXRemaining] = []string{"0"}
			resp := &http.Response{StatusCode: 429, Header: h}
			start := time.Now()
			allocs := testing.AllocsPerRun(20, func() {
				if d, src, ok := Hint(resp, raNow); ok || d != 0 || src != "" {
					t.Fatalf("hint %v from %s", d, src)
				}
				if _, _, src, ok := quota(h, raNow); ok {
					t.Fatalf("quota from %s", src)
				}
			})
			assert.Zero(t, allocs)
			assert.Less(t, time.Since(start), 2*time.Second)
		}
	})

	t.Run("DefaultClassifier", func(t *testing.T) {
		classifierBounded(t, []string{"application/json", "application/xml", "application/json" + mib('x'), mib('x')})
	})

	t.Run("route patterns", func(t *testing.T) {
		for _, p := range []string{"/" + mib('a'), "GET /" + mib('a') + "/{id}", "/{" + mib('x') + "}", mib(' ')} {
			start := time.Now()
			r, err := compileRoutes([]routeSpec{{p, Policy{}}})
			if err == nil {
				req, _ := http.NewRequest("GET", "http://api.example/"+mib('a'), nil)
				r.match(req)
			}
			assert.Less(t, time.Since(start), 5*time.Second)
		}
		_, err := compileRoutes([]routeSpec{{mib(' '), Policy{}}})
		require.Error(t, err)
	})
}

// TestDefaultClassifierHugeMixedCaseContentType: a 1 MiB Content-Type with
// an upper-case letter on a 429 or 503 is copied whole (strings.ToLower in
// respContentType) on every classification.
func TestDefaultClassifierHugeMixedCaseContentType(t *testing.T) {
	classifierBounded(t, []string{"Application/JSON" + mib('X'), mib('J')})
}

// classifierBounded classifies responses whose every hint header holds
// 1 MiB and whose Content-Type is each of cts, with a 1 MiB JSON body.
func classifierBounded(t *testing.T, cts []string) {
	keys := []string{hdrRetryAfterMs, hdrMsRetryAfterMs, hdrRateLimit, hdrRateLimitReset, hdrRateLimitRemaining, hdrXRemaining, hdrXReset, hdrRemainingRequests, hdrResetRequests, "Stripe-Should-Retry", "X-Should-Retry"}
	body := []byte(`{"error":{"code":"` + mib('q') + `"}}`)
	for _, withRA := range []bool{false, true} {
		for _, status := range []int{200, 403, 429, 500, 503} {
			for _, ct := range cts {
				h := http.Header{"Content-Type": {ct}}
				for _, k := range keys {
					h[k] = []string{mib('7')}
				}
				if withRA {
					h[hdrRetryAfter] = []string{mib('7')}
				}
				cb := &countingBody{r: bytes.NewReader(body)}
				resp := &http.Response{StatusCode: status, Header: h, Body: cb}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				v := DefaultClassifier(&http.Request{Method: "GET", Header: http.Header{}}, resp, nil)
				took := time.Since(start)
				runtime.ReadMemStats(&after)
				checkVerdict(t, v)
				assert.LessOrEqual(t, cb.read, classifyPeekLimit, "status %d", status)
				assert.Less(t, took, 2*time.Second)
				// A peek costs 4 KiB and a few small objects; nothing in
				// proportion to a header value.
				assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "status %d, content type of %d bytes", status, len(ct))
			}
		}
	}
}
