package heed_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// peekSuccess returns the classifier of a policy with PeekSuccess.
func peekSuccess(t *testing.T) heed.Classifier {
	req := newRequest(t, t.Context(), "POST", "https://api.example/graphql", nil)
	return policyOf(heed.New(nil, heed.WithPolicy(heed.Policy{PeekSuccess: true})), req).Classify
}

func TestPeekSuccessClassifies(t *testing.T) {
	const shopify = `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{"requestedQueryCost":202,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":50,"restoreRate":50.0}}}}`
	const sse = "text/event-stream"
	ok := heed.Verdict{Class: heed.Deliver, Reason: "ok"}
	tests := []struct {
		name string
		ct   string
		body string
		want heed.Verdict
	}{
		{"Shopify THROTTLED", ctJSON, shopify, heed.Verdict{Class: heed.Throttled, Reason: "rate limited", Wait: 3040 * time.Millisecond, Source: "throttleStatus"}},
		{"Shopify THROTTLED, nothing to restore from", ctJSON, `{"errors":[{"extensions":{"code":"THROTTLED"}}]}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"Shopify THROTTLED, enough available", ctJSON, `{"errors":[{"extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{"requestedQueryCost":10,"throttleStatus":{"currentlyAvailable":50,"restoreRate":50}}}}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"GitHub RATE_LIMITED", ctJSON, `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"GraphQL cut short", ctJSON, `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"data":"` + strings.Repeat("x", 5000), heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"GraphQL data with another error", ctJSON, `{"data":{"shop":null},"errors":[{"message":"Access denied","extensions":{"code":"ACCESS_DENIED"}}]}`, ok},
		{"a JSON success", ctJSON, `{"data":{"shop":{"name":"x"}}}`, ok},
		{"a message that says THROTTLED", ctJSON, `{"data":{"note":"THROTTLED"}}`, ok},
		{"Anthropic overloaded", sse, "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n", heed.Verdict{Class: heed.Throttled, Reason: "overloaded"}},
		{"Anthropic rate limit", sse, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"x\"}}\n\n", heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"Anthropic api_error", sse, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}\n\n", heed.Verdict{Class: heed.Ambiguous, Reason: "server error"}},
		{"CRLF lines", sse, "event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\r\n\r\n", heed.Verdict{Class: heed.Throttled, Reason: "overloaded"}},
		{"a comment first", sse, ": ping\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n", heed.Verdict{Class: heed.Throttled, Reason: "overloaded"}},
		{"OpenAI error data", sse, "data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n", heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"OpenAI server error", sse, "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"code\":null}}\n\n", heed.Verdict{Class: heed.Ambiguous, Reason: "server error"}},
		{"OpenAI insufficient quota", sse, "data: {\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}\n\n", heed.Verdict{Class: heed.Terminal, Reason: "billing"}},
		{"an error of a kind heed does not retry", sse, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\"}}\n\n", ok},
		{"a healthy stream", sse, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n", ok},
		{"a later event that is an error", sse, "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n", ok},
		{"a first event cut short", sse, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}", ok},
		{"a named event with an error member", sse, "event: message_delta\ndata: {\"type\":\"message_delta\",\"error\":{\"type\":\"overloaded_error\"}}\n\n", ok},
		{"HTML is not read", "text/html", `{"errors":[{"type":"RATE_LIMITED"}]}`, ok},
		{"NDJSON is not read", "application/x-ndjson", `{"errors":[{"type":"RATE_LIMITED"}]}`, ok},
		{"GraphQL's own media type", "application/graphql-response+json", `{"errors":[{"type":"RATE_LIMITED"}]}`, heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"a comment block before the error", sse, ": OPENROUTER PROCESSING\n\ndata: {\"error\":{\"message\":\"Rate limit reached\",\"code\":\"rate_limit_exceeded\"}}\n\n", heed.Verdict{Class: heed.Throttled, Reason: "rate limited"}},
		{"an event with no data before the error", sse, "event: ping\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n", heed.Verdict{Class: heed.Throttled, Reason: "overloaded"}},
		{"blank lines first", sse, "\n\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n", heed.Verdict{Class: heed.Throttled, Reason: "overloaded"}},
	}
	classify := peekSuccess(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkClassified(t, classify, 200, hdr("Content-Type", tt.ct), tt.body, tt.want)
		})
	}
}

// TestNoPeekSuccessReadsNothing: without PeekSuccess a 2xx body is never
// read, whatever it holds.
func TestNoPeekSuccessReadsNothing(t *testing.T) {
	req := newRequest(t, t.Context(), "POST", "https://api.example/graphql", nil)
	classify := policyOf(heed.New(nil), req).Classify
	for _, ct := range []string{ctJSON, "text/event-stream"} {
		resp, tb := classifyResp(200, hdr("Content-Type", ct), "event: error\ndata: {\"errors\":[{\"type\":\"RATE_LIMITED\"}],\"error\":{\"type\":\"overloaded_error\"}}\n\n")
		assert.Equal(t, heed.Verdict{Class: heed.Deliver, Reason: "ok"}, classify(nil, resp, nil))
		assert.Same(t, tb, resp.Body, "%s: not read", ct)
	}
}

// streamRT answers every request with a 200 event stream: for the first
// `errors` sends a stream that opens with an overloaded error, then a
// healthy one that sends its first event and then holds until released.
type streamRT struct {
	errors  int
	sends   []time.Time
	release chan struct{}
}

func (s *streamRT) RoundTrip(r *http.Request) (*http.Response, error) {
	s.sends = append(s.sends, time.Now())
	body := io.NopCloser(strings.NewReader("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	if len(s.sends) > s.errors {
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
			<-s.release
			_, _ = io.WriteString(pw, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			_ = pw.Close()
		}()
		body = pr
	}
	return &http.Response{StatusCode: 200, Header: hdr("Content-Type", "text/event-stream", "Retry-After", "2"), Body: body, Request: r}, nil
}

// TestStreamThatOpensWithAnError: such a stream is retried before any byte
// reaches the caller, after the wait its headers give, and the healthy
// stream that follows is handed over at its first event, not held to its
// end, every byte of it whole.
func TestStreamThatOpensWithAnError(t *testing.T) {
	for _, errors := range []int{1, 2} {
		t.Run(strings.Repeat("error,", errors), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := &streamRT{errors: errors, release: make(chan struct{})}
				tr := heed.New(rt, heed.WithPolicy(heed.Policy{PeekSuccess: true}))
				req := newRequest(t, t.Context(), "POST", "https://api.anthropic.com/v1/messages", nil)
				req.Header.Set("Idempotency-Key", "k-1")
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				require.Len(t, rt.sends, errors+1)
				for i := 1; i < len(rt.sends); i++ {
					assert.Equal(t, 2*time.Second, rt.sends[i].Sub(rt.sends[i-1]), "the stream's Retry-After")
				}
				close(rt.release) // the rest of the stream comes only now
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", string(b))
				require.NoError(t, resp.Body.Close())
			})
		})
	}
}

// TestStreamsNotHeld: a stream PeekSuccess does not read as events (JSON
// lines, or an event stream encoded as the caller asked) is handed over at
// once, and its first bytes reach the caller as they come.
func TestStreamsNotHeld(t *testing.T) {
	for _, tt := range []struct {
		name, ct, encoding string
	}{
		{"NDJSON", "application/x-ndjson", ""},
		{"JSON sequence", "application/json-seq", ""},
		{"a gzip event stream", "text/event-stream", "gzip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pr, pw := io.Pipe()
				go func() { _, _ = io.WriteString(pw, "first bytes\n") }()
				h := hdr("Content-Type", tt.ct)
				if tt.encoding != "" {
					h.Set("Content-Encoding", tt.encoding)
				}
				tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: 200, Header: h, Body: pr, Request: r}, nil
				}), heed.WithPolicy(heed.Policy{PeekSuccess: true}))
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "http://localhost:11434/api/generate", nil))
				require.NoError(t, err)
				assert.Zero(t, time.Since(start), "handed over at once")
				got := make(chan int, 1)
				go func() {
					n, _ := resp.Body.Read(make([]byte, 1024))
					got <- n
				}()
				synctest.Wait()
				select {
				case n := <-got:
					assert.Positive(t, n)
				default:
					t.Error("the first bytes, already sent, are withheld")
				}
				_ = pw.Close()
				require.NoError(t, resp.Body.Close())
			})
		})
	}
}

// TestStreamSlowToItsFirstEvent: a stream whose first event does not come
// within 500 ms is handed over then, unread, and its bytes reach the
// caller whole when they come.
func TestStreamSlowToItsFirstEvent(t *testing.T) {
	for _, delay := range []time.Duration{time.Second, 5 * time.Second} {
		t.Run(delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pr, pw := io.Pipe()
				const event = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"
				go func() {
					time.Sleep(delay)
					_, _ = io.WriteString(pw, event)
					_ = pw.Close()
				}()
				tr := heed.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: 200, Header: hdr("Content-Type", "text/event-stream"), Body: pr, Request: r}, nil
				}), heed.WithPolicy(heed.Policy{PeekSuccess: true}))
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "POST", "https://api.anthropic.com/v1/messages", nil))
				require.NoError(t, err)
				assert.Equal(t, 500*time.Millisecond, time.Since(start), "handed over at the peek's bound")
				assert.Equal(t, 200, resp.StatusCode)
				assert.Equal(t, event, readBody(t, resp), "every byte, when it comes")
			})
		})
	}
}
