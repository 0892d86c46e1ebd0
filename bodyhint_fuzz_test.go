package heed

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// FuzzBodyHint: any body a 429 may carry reads as a wait that is never
// negative, named when given, and the classifier leaves the body whole.
// The seed corpus is testdata/fuzz/FuzzBodyHint.
func FuzzBodyHint(f *testing.F) {
	f.Add([]byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}`))
	f.Add([]byte(`{"retry_after":64.57,"global":false}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h := readBodyHint(b)
		if h.wait < 0 {
			t.Fatalf("negative wait %v from %q", h.wait, b)
		}
		if h.source == "" && h.wait != 0 {
			t.Fatalf("wait %v with no source from %q", h.wait, b)
		}
		if h.source != "" && h.source != sourceRetryInfo && h.source != sourceRetryAfter {
			t.Fatalf("source %q", h.source)
		}
		resp := &http.Response{StatusCode: 429, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b))}
		v := DefaultClassifier(nil, resp, nil)
		if v.Wait < 0 || v.Source == "" && v.Wait != 0 {
			t.Fatalf("verdict %+v", v)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("body not whole: %q, %v", got, err)
		}
	})
}

// FuzzProtoDuration: a protobuf Duration that parses is never negative,
// and its canonical form, nine decimals, parses to the same wait.
// The seed corpus is testdata/fuzz/FuzzProtoDuration.
func FuzzProtoDuration(f *testing.F) {
	for _, s := range []string{"26s", "45.837906927s", "0.5s", "-1s", "1.s", "9223372036s", "9223372036.854775807s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseProtoDuration(s)
		if !ok {
			if d != 0 {
				t.Fatalf("%q: rejected with %v", s, d)
			}
			return
		}
		if d < 0 {
			t.Fatalf("%q: negative %v", s, d)
		}
		canon := strconv.FormatInt(int64(d/time.Second), 10) + "." + strconv.FormatInt(int64(d%time.Second)+1e9, 10)[1:] + "s"
		if back, ok := parseProtoDuration(canon); !ok || back != d {
			t.Fatalf("%q: %v, but its canonical %q reads %v, %v", s, d, canon, back, ok)
		}
	})
}

// FuzzAWSThrottle: any 400 an AWS service may send is judged without
// panic, Throttled or Terminal, from the header or a body that stays
// whole.
// The seed corpus is testdata/fuzz/FuzzAWSThrottle.
func FuzzAWSThrottle(f *testing.F) {
	f.Add("", "application/x-amz-json-1.0", []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}`))
	f.Add("ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/", "application/json", []byte(`{}`))
	f.Add("", "text/xml", []byte(`<ErrorResponse><Error><Code>Throttling</Code></Error></ErrorResponse>`))
	f.Fuzz(func(t *testing.T, errorType, contentType string, b []byte) {
		h := http.Header{"Content-Type": {contentType}}
		if errorType != "" {
			h.Set("X-Amzn-Errortype", errorType)
		}
		resp := &http.Response{StatusCode: 400, Header: h, Body: io.NopCloser(bytes.NewReader(b))}
		v := DefaultClassifier(nil, resp, nil)
		if v.Class != Throttled && v.Class != Terminal {
			t.Fatalf("a 400 is %v", v.Class)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("body not whole: %q, %v", got, err)
		}
		if c := awsErrorCode(errorType); len(c) > len(errorType) {
			t.Fatalf("code %q longer than %q", c, errorType)
		}
	})
}

// FuzzRefusalInSuccess: any 2xx body, JSON or an event stream, read with
// PeekSuccess gives a verdict of a known class with a wait never negative,
// and the body stays whole. The seed corpus is
// testdata/fuzz/FuzzRefusalInSuccess.
func FuzzRefusalInSuccess(f *testing.F) {
	f.Add(true, []byte("event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\"}}\n\n"))
	f.Add(false, []byte(`{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{"requestedQueryCost":202,"throttleStatus":{"currentlyAvailable":100,"restoreRate":100.0}}}}`))
	f.Add(false, []byte(`{"errors":[{"type":"RATE_LIMITED"}]}`))
	classify := successClassifier(DefaultClassifier)
	f.Fuzz(func(t *testing.T, stream bool, b []byte) {
		ct := "application/json"
		if stream {
			ct = "text/event-stream"
		}
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(b))}
		v := classify(nil, resp, nil)
		if v.Class > Ambiguous || v.Wait < 0 || v.Source == "" && v.Wait != 0 {
			t.Fatalf("verdict %+v", v)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("body not whole: %q, %v", got, err)
		}
	})
}
