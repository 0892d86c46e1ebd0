package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
)

// The S3 SDK hides the wire request from its caller: it wraps the body in
// its own reader, without GetBody and without io.ReaderAt, so heed can
// replay it only by buffering (up to 1 MiB; a larger body is sent once and
// not retried). And it reads an error response's body to build its error,
// so the caller cannot show that body. A call carries both things past the
// SDK, from the uploader to its HTTP client, in the request's context.
type call struct {
	// body, when set, is the staged file the request's body was made
	// from: its bytes from 0 to size are exactly what goes on the wire.
	body     io.ReaderAt
	bodySize int64

	// errBody is the start of the last error response's body.
	errBody []byte
}

type callKey struct{}

// withCall returns ctx carrying c.
func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// errBodyLimit is how much of an error response's body a call keeps.
const errBodyLimit = 4 << 10

// callClient is the S3 client's HTTP client: an *http.Client whose
// transport is heed, plus what the request's call adds.
type callClient struct{ *http.Client }

// Do gives heed a way to resend a staged file without buffering it, and
// keeps the start of any error response's body.
func (c callClient) Do(req *http.Request) (*http.Response, error) {
	cl, _ := req.Context().Value(callKey{}).(*call)
	if cl != nil && cl.body != nil && replayableFromFile(req, cl.bodySize) {
		ra, n := cl.body, cl.bodySize
		req = req.WithContext(req.Context()) // a shallow copy: never change the SDK's request
		req.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(io.NewSectionReader(ra, 0, n)), nil
		}
	}
	resp, err := c.Client.Do(req)
	if cl != nil && resp != nil && resp.StatusCode >= 400 && resp.Body != nil {
		cl.errBody = keepStart(resp, errBodyLimit)
	}
	return resp, err
}

// replayableFromFile reports whether req's body is the staged file's bytes
// as they are. It is not when the SDK encodes the body as aws-chunked
// (over TLS, when it computes a trailing checksum itself; the uploader
// avoids that by sending the checksum in a header), or when the length
// differs.
func replayableFromFile(req *http.Request, size int64) bool {
	return req.GetBody == nil && req.Body != nil && req.ContentLength == size &&
		!strings.Contains(strings.ToLower(req.Header.Get("Content-Encoding")), "aws-chunked")
}

// keepStart reads up to n bytes of resp's body, puts them back in front of
// the rest so the SDK still reads the whole body, and returns them.
func keepStart(resp *http.Response, n int64) []byte {
	start, _ := io.ReadAll(io.LimitReader(resp.Body, n))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(start), resp.Body), resp.Body}
	return start
}
