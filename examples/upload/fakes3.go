package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// s3Reply is a scripted error answer of the fake store.
type s3Reply struct {
	status int
	header map[string]string
	body   string
}

// s3Request is one request as the fake store saw it.
type s3Request struct {
	Method string
	Key    string // bucket/key
	At     time.Time
	Status int
	Size   int    // body bytes received
	Coding string // Content-Encoding
}

// fakeS3 is a loopback S3 for path-style requests: HEAD, PUT and GET of
// objects. It checks each PUT's body against its Content-Length,
// x-amz-content-sha256 and x-amz-checksum-sha256, honours If-None-Match: *,
// and answers the next PUTs from a script of faults when one is set.
type fakeS3 struct {
	srv *httptest.Server

	mu      sync.Mutex
	objects map[string][]byte
	faults  []s3Reply
	log     []s3Request
}

// newFakeS3 starts a fake store on 127.0.0.1, with TLS if tls is set.
func newFakeS3(tls bool) *fakeS3 {
	f := &fakeS3{objects: make(map[string][]byte)}
	if tls {
		f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	} else {
		f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	}
	return f
}

// URL is the endpoint to give the SDK.
func (f *fakeS3) URL() string { return f.srv.URL }

// Close stops the server.
func (f *fakeS3) Close() { f.srv.Close() }

// FailPuts makes the next PUTs get replies, in order, instead of storing.
func (f *fakeS3) FailPuts(replies ...s3Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, replies...)
}

// Put stores an object directly, as another writer would.
func (f *fakeS3) Put(key string, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = b
}

// Requests returns the requests received so far.
func (f *fakeS3) Requests() []s3Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]s3Request(nil), f.log...)
}

// Objects returns a copy of the stored objects by bucket/key.
func (f *fakeS3) Objects() map[string][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]byte, len(f.objects))
	for k, v := range f.objects {
		out[k] = v
	}
	return out
}

func (f *fakeS3) serve(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/")
	rec := s3Request{Method: r.Method, Key: key, At: time.Now(), Coding: r.Header.Get("Content-Encoding")}
	defer func() {
		f.mu.Lock()
		f.log = append(f.log, rec)
		f.mu.Unlock()
	}()
	if r.Header.Get("Authorization") == "" {
		rec.Status = writeS3Error(w, s3Reply{status: http.StatusForbidden, body: s3ErrorXML("AccessDenied", "Access Denied")})
		return
	}

	switch r.Method {
	case http.MethodHead, http.MethodGet:
		f.mu.Lock()
		obj, ok := f.objects[key]
		f.mu.Unlock()
		if !ok {
			rec.Status = http.StatusNotFound
			if r.Method == http.MethodHead {
				w.WriteHeader(rec.Status)
				return
			}
			writeS3Error(w, s3Reply{status: rec.Status, body: s3ErrorXML("NoSuchKey", "The specified key does not exist.")})
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(obj)))
		w.Header().Set("ETag", etag(obj))
		rec.Status = http.StatusOK
		w.WriteHeader(rec.Status)
		if r.Method == http.MethodGet {
			w.Write(obj)
		}
	case http.MethodPut:
		f.mu.Lock()
		var fault *s3Reply
		if len(f.faults) > 0 {
			fault = &f.faults[0]
			f.faults = f.faults[1:]
		}
		f.mu.Unlock()
		if fault != nil {
			// Read the body first: a Go server that answers early
			// and closes makes the client's write fail at random
			// with a reset instead of showing it this reply.
			n, _ := io.Copy(io.Discard, r.Body)
			rec.Size = int(n)
			rec.Status = writeS3Error(w, *fault)
			return
		}
		wire, err := io.ReadAll(r.Body)
		rec.Size = len(wire)
		if err != nil {
			rec.Status = writeS3Error(w, s3Reply{status: http.StatusBadRequest, body: s3ErrorXML("IncompleteBody", err.Error())})
			return
		}
		body, msg := decodeBody(r, wire)
		if msg == "" {
			msg = checkBody(r, body)
		}
		if msg != "" {
			rec.Status = writeS3Error(w, s3Reply{status: http.StatusBadRequest, body: s3ErrorXML("BadDigest", msg)})
			return
		}
		f.mu.Lock()
		_, exists := f.objects[key]
		if exists && r.Header.Get("If-None-Match") == "*" {
			f.mu.Unlock()
			rec.Status = writeS3Error(w, s3Reply{status: http.StatusPreconditionFailed, body: s3ErrorXML("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")})
			return
		}
		f.objects[key] = body
		f.mu.Unlock()
		w.Header().Set("ETag", etag(body))
		rec.Status = http.StatusOK
		w.WriteHeader(rec.Status)
	default:
		rec.Status = writeS3Error(w, s3Reply{status: http.StatusMethodNotAllowed, body: s3ErrorXML("MethodNotAllowed", "The specified method is not allowed against this resource.")})
	}
}

// checkBody says what is wrong with a PUT's decoded body, or "" when it
// matches every length and digest the request declares.
func checkBody(r *http.Request, body []byte) string {
	sum := sha256.Sum256(body)
	if h := r.Header.Get("X-Amz-Content-Sha256"); len(h) == 64 && h != hex.EncodeToString(sum[:]) {
		return "x-amz-content-sha256 does not match the body"
	}
	if h := r.Header.Get("X-Amz-Checksum-Sha256"); h != "" && h != base64.StdEncoding.EncodeToString(sum[:]) {
		return "x-amz-checksum-sha256 does not match the body"
	}
	return ""
}

func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// writeS3Error writes rep and returns its status.
func writeS3Error(w http.ResponseWriter, rep s3Reply) int {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", "FAKE0000REQUEST")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
	return rep.status
}

func s3ErrorXML(code, msg string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<Error><Code>` + code + `</Code><Message>` + msg + `</Message><RequestId>FAKE0000REQUEST</RequestId><HostId>fake</HostId></Error>`
}

// slowDown is S3's 503 for a prefix sending too fast. It carries no
// Retry-After: the client's backoff decides.
func slowDown() s3Reply {
	return s3Reply{status: http.StatusServiceUnavailable, body: s3ErrorXML("SlowDown", "Please reduce your request rate.")}
}

// tooManyRequests is a 429 with a Retry-After in seconds, as several
// S3-compatible stores send.
func tooManyRequests(retryAfter int) s3Reply {
	return s3Reply{
		status: http.StatusTooManyRequests,
		header: map[string]string{"Retry-After": strconv.Itoa(retryAfter)},
		body:   s3ErrorXML("TooManyRequests", "Request rate exceeded, retry later."),
	}
}

// trialExpired is a 402 from an S3-compatible store whose trial has ended.
func trialExpired() s3Reply {
	return s3Reply{status: http.StatusPaymentRequired, body: s3ErrorXML("TrialExpired", "Your free trial has ended. Add a payment method to keep uploading.")}
}

// accountProblem is S3's 403 for an account that cannot be used (billing).
func accountProblem() s3Reply {
	return s3Reply{status: http.StatusForbidden, body: s3ErrorXML("AccountProblem", "There is a problem with your AWS account that prevents the operation from completing successfully.")}
}
