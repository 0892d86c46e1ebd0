package heed_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// fixtureDir holds real vendors' responses as raw HTTP files: one comment
// line starting with '#' that names the vendor document the response
// follows, then the response as sent (status line, headers, blank line,
// body). The files carry no Content-Length: the body is the rest of the
// file.
const fixtureDir = "httptest_fixtures"

// fixtureNames returns the names of every fixture file, sorted.
func fixtureNames(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(fixtureDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".http") {
			names = append(names, e.Name())
		}
	}
	require.NotEmpty(t, names)
	return names
}

// loadFixture parses a fixture into a fresh response whose body is in
// memory and readable once, as from the network.
func loadFixture(t testing.TB, name string) *http.Response {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	comment, rest, ok := bytes.Cut(raw, []byte("\n"))
	require.True(t, ok, "%s: empty fixture", name)
	require.True(t, bytes.HasPrefix(comment, []byte("# ")) && len(comment) > 10,
		"%s: the first line must be a comment naming the vendor document", name)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rest)), nil)
	require.NoError(t, err, name)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, name)
	require.NoError(t, resp.Body.Close())
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp
}

// fixtureBody returns a fixture's body.
func fixtureBody(t testing.TB, name string) string {
	t.Helper()
	b, err := io.ReadAll(loadFixture(t, name).Body)
	require.NoError(t, err)
	return string(b)
}

// fixtureEpoch is where each fixture bubble moves its fake clock first,
// from synctest's 2000-01-01, so that the fixtures, recorded from 2016 on,
// are rebased forward in time as they would be read live. Waiting on a
// timer inside a bubble takes no real time.
var fixtureEpoch = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// toFixtureEpoch moves a bubble's fake clock to fixtureEpoch. It must be
// called inside a synctest bubble, before anything else.
func toFixtureEpoch(t testing.TB) {
	t.Helper()
	d := time.Until(fixtureEpoch)
	require.Positive(t, d, "toFixtureEpoch runs inside a synctest bubble")
	<-time.After(d)
	require.True(t, time.Now().Equal(fixtureEpoch))
}

// rebaseFixture moves every absolute time in resp by the offset that takes
// its Date header to now, so that the waits the vendor meant (a reset or a
// Retry-After date, relative to when it answered) hold under the fake
// clock, whenever the fixture was recorded. It rewrites HTTP-dates (Date,
// a dated Retry-After), Unix-seconds values of *-Reset headers (above 1e9,
// as GitHub sends) and RFC 3339 times (Anthropic's resets). Relative
// values (delta-seconds, "2.4s") are left as they are.
func rebaseFixture(t testing.TB, resp *http.Response, now time.Time) {
	t.Helper()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	require.NoError(t, err, "every fixture carries a Date header")
	off := now.Sub(date)
	for k, vs := range resp.Header {
		for i, v := range vs {
			if ts, err := http.ParseTime(v); err == nil {
				vs[i] = ts.Add(off).UTC().Format(http.TimeFormat)
				continue
			}
			if strings.HasSuffix(k, "-Reset") {
				whole, frac, _ := strings.Cut(strings.TrimSpace(v), ".")
				if n, err := strconv.ParseInt(whole, 10, 64); err == nil && n > 1e9 {
					n += int64(off / time.Second)
					require.Greater(t, n, int64(1e9), "%s stays a Unix time", k)
					vs[i] = strconv.FormatInt(n, 10)
					if frac != "" { // Discord's: a Unix time with a fraction
						vs[i] += "." + frac
					}
					continue
				}
			}
			if ts, err := time.Parse(time.RFC3339, v); err == nil {
				vs[i] = ts.Add(off).UTC().Format(time.RFC3339)
			}
		}
	}
}

// fixtureRT is an in-memory RoundTripper.
type fixtureRT func(*http.Request) (*http.Response, error)

func (f fixtureRT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// What the Transport does with a fixture's response.
const (
	thenWait    = "wait"    // retries after exactly the row's wait
	thenDefer   = "defer"   // the wait exceeds MaxWait: *DeferredError at once
	thenDeliver = "deliver" // one request, the response returned as is
	thenHold    = "hold"    // served and returned as is; the scope's next send waits the row's wait
)

// fixtureBackoff is the wait when a response gives no hint; it differs from
// every hint in the fixtures.
const fixtureBackoff = 5 * time.Second

// fixtureCase says what a fixture means and what the Transport does next.
type fixtureCase struct {
	method string
	url    string
	key    string // Idempotency-Key the request carries, if any
	class  heed.Class
	reason string
	then   string
	wait   time.Duration // for thenWait and thenDefer: hint (at least MinWait) or backoff
}

// fixtureCases has one row per file in httptest_fixtures.
var fixtureCases = map[string]fixtureCase{
	"openai-429-rate-limit.http": {
		"POST", "https://api.openai.com/v1/chat/completions", "",
		heed.Throttled, "rate limited", thenWait, 3 * time.Second, // retry-after: 3
	},
	"openai-429-insufficient-quota.http": {
		"POST", "https://api.openai.com/v1/chat/completions", "",
		heed.Terminal, "billing", thenDeliver, 0,
	},
	"openai-500-server-error.http": {
		// Ambiguous, and a POST without a key is not replay-safe.
		"POST", "https://api.openai.com/v1/chat/completions", "",
		heed.Ambiguous, "server error", thenDeliver, 0,
	},
	"github-403-primary-rate-limit.http": {
		// x-ratelimit-reset is 20m47s after Date: longer than MaxWait.
		"GET", "https://api.github.com/repos/octocat/hello-world", "",
		heed.Throttled, "rate limited", thenDefer, 20*time.Minute + 47*time.Second,
	},
	"github-403-secondary-rate-limit.http": {
		"POST", "https://api.github.com/repos/octocat/hello-world/issues", "",
		heed.Throttled, "rate limited", thenWait, 60 * time.Second, // retry-after: 60
	},
	"azure-openai-429-retry-after-ms.http": {
		// retry-after: 3 and retry-after-ms: 2500: the largest wins.
		"POST", "https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-02-01", "",
		heed.Throttled, "rate limited", thenWait, 3 * time.Second,
	},
	"azure-cosmos-429-x-ms-retry-after-ms.http": {
		"POST", "https://contoso.documents.azure.com/dbs/db/colls/c/docs", "",
		heed.Throttled, "rate limited", thenWait, 1500 * time.Millisecond,
	},
	"aws-s3-503-slowdown.http": {
		"PUT", "https://bucket.s3.amazonaws.com/key", "",
		heed.Throttled, "slow down", thenWait, fixtureBackoff, // no hint
	},
	"stripe-429-rate-limit.http": {
		"POST", "https://api.stripe.com/v1/charges", "5b1f3e0a-8c2d-4f7a-9e6b-1d4c7a0e3f52",
		heed.Throttled, "rate limited", thenWait, fixtureBackoff, // no hint
	},
	"stripe-500-should-not-retry.http": {
		"POST", "https://api.stripe.com/v1/charges", "5b1f3e0a-8c2d-4f7a-9e6b-1d4c7a0e3f52",
		heed.Terminal, "should not retry", thenDeliver, 0,
	},
	"stripe-500-should-retry-true.http": {
		// A key-less POST would not be resent after a 500; the header says
		// the request was not processed, so it is.
		"POST", "https://api.stripe.com/v1/charges", "",
		heed.Transient, "should retry", thenWait, fixtureBackoff, // no hint
	},
	"anthropic-500-x-should-retry-false.http": {
		"POST", "https://api.anthropic.com/v1/messages", "",
		heed.Terminal, "should not retry", thenDeliver, 0,
	},
	"stripe-402-card-declined.http": {
		"POST", "https://api.stripe.com/v1/payment_intents", "9a2c4e6f-1b3d-4f5a-8c7e-0d2f4b6a8c1e",
		heed.Terminal, "billing", thenDeliver, 0,
	},
	"stripe-409-idempotency-key-in-use.http": {
		"POST", "https://api.stripe.com/v1/charges", "7c3e9a1f-5b2d-4e8a-b6f0-2d9c4a7e1b35",
		heed.Transient, "in progress", thenWait, fixtureBackoff, // no hint
	},
	"shopify-429-retry-after-decimal.http": {
		// Retry-After: 2.0, decimal seconds.
		"GET", "https://shop.myshopify.com/admin/api/2024-04/products.json", "",
		heed.Throttled, "rate limited", thenWait, 2 * time.Second,
	},
	"anthropic-529-overloaded.http": {
		// retry-after: 10; x-should-retry: true keeps it Throttled.
		"POST", "https://api.anthropic.com/v1/messages", "",
		heed.Throttled, "overloaded", thenWait, 10 * time.Second,
	},
	"anthropic-429-rate-limit.http": {
		"POST", "https://api.anthropic.com/v1/messages", "",
		heed.Throttled, "rate limited", thenWait, 14 * time.Second, // retry-after: 14
	},
	"rfc9110-503-retry-after-http-date.http": {
		// Retry-After is an HTTP-date 30s after Date.
		"GET", "https://www.example.com/", "",
		heed.Throttled, "unavailable", thenWait, 30 * time.Second,
	},
	"gemini-429-retry-info.http": {
		// No header hint; the body's RetryInfo says 26s.
		"POST", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent", "",
		heed.Throttled, "rate limited", thenWait, 26 * time.Second,
	},
	"gemini-429-per-day-quota.http": {
		// A per-day quota: its RetryInfo (43s) is no cure.
		"POST", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent", "",
		heed.Terminal, "quota", thenDeliver, 0,
	},
	"discord-429-rate-limit.http": {
		// Retry-After: 65 beside retry_after 64.57: the longer wins, past MaxWait.
		"POST", "https://discord.com/api/v10/channels/123/messages", "",
		heed.Throttled, "rate limited", thenDefer, 65 * time.Second,
	},
	"aws-dynamodb-400-throttling.http": {
		// A throttle by its __type, whatever the method; no hint.
		"POST", "https://dynamodb.us-east-1.amazonaws.com/", "",
		heed.Throttled, "rate limited", thenWait, fixtureBackoff,
	},
	"aws-dynamodb-400-validation.http": {
		"POST", "https://dynamodb.us-east-1.amazonaws.com/", "",
		heed.Terminal, "client error", thenDeliver, 0,
	},
	"aws-sts-400-throttling.http": {
		// A throttle by its XML <Code>; no hint.
		"POST", "https://sts.amazonaws.com/", "",
		heed.Throttled, "rate limited", thenWait, fixtureBackoff,
	},
	"github-403-secondary-no-retry-after.http": {
		// No retry-after, requests remaining: at least a minute, as documented.
		"POST", "https://api.github.com/repos/octocat/hello-world/issues", "",
		heed.Throttled, "rate limited", thenWait, time.Minute,
	},
	"salesforce-403-request-limit-exceeded.http": {
		// The 24-hour total: no short wait cures it.
		"GET", "https://example.my.salesforce.com/services/data/v60.0/sobjects/Account", "",
		heed.Terminal, "quota", thenDeliver, 0,
	},
	"x-429-rate-limit.http": {
		// x-rate-limit-reset is 11m40s after Date: longer than MaxWait.
		"GET", "https://api.x.com/2/tweets/search/recent", "",
		heed.Throttled, "rate limited", thenDefer, 11*time.Minute + 40*time.Second,
	},
	"openai-429-tokens-spent.http": {
		// No retry-after: the spent tokens' reset, 7.66s, is the wait.
		"POST", "https://api.openai.com/v1/chat/completions", "",
		heed.Throttled, "rate limited", thenWait, 7660 * time.Millisecond,
	},
	"anthropic-200-output-tokens-spent.http": {
		// Served, but output tokens are spent until 20s after Date.
		"POST", "https://api.anthropic.com/v1/messages", "",
		heed.Deliver, "ok", thenHold, 20 * time.Second,
	},
	"shopify-200-graphql-throttled.http": {
		// (requestedQueryCost 202 - currentlyAvailable 100) / restoreRate 100.
		"POST", "https://shop.myshopify.com/admin/api/2024-04/graphql.json", "",
		heed.Throttled, "rate limited", thenWait, 1020 * time.Millisecond,
	},
	"github-200-graphql-rate-limited.http": {
		// x-ratelimit-reset is 30s after Date.
		"POST", "https://api.github.com/graphql", "",
		heed.Throttled, "rate limited", thenWait, 30 * time.Second,
	},
	"anthropic-200-stream-overloaded.http": {
		// The stream opens with an overloaded_error: a 529, with no hint.
		"POST", "https://api.anthropic.com/v1/messages", "",
		heed.Throttled, "overloaded", thenWait, fixtureBackoff,
	},
	"google-429-resource-exhausted.http": {
		// A per-minute quota: a rate limit, not billing.
		"POST", "https://translation.googleapis.com/language/translate/v2", "",
		heed.Throttled, "rate limited", thenWait, fixtureBackoff, // no hint
	},
	"ietf-429-quota-exceeded.http": {
		// quota-exceeded with no reset: no wait fixes it.
		"GET", "https://api.example/v1/items", "",
		heed.Terminal, "quota", thenDeliver, 0,
	},
	"ietf-429-quota-exceeded-ratelimit.http": {
		// quota-exceeded, but RateLimit r=0;t=30 says when it resets.
		"GET", "https://api.example/v1/items", "",
		heed.Throttled, "rate limited", thenWait, 30 * time.Second,
	},
}

// fixturePolicy makes every wait exact: a constant backoff, no jitter, and
// the default MinWait (1s) and MaxWait (60s).
func fixturePolicy(name string) heed.Policy {
	return heed.Policy{MaxAttempts: 2, Backoff: heed.Constant(fixtureBackoff), Jitter: 0, MinWait: time.Second, PeekSuccess: fixturesPeekSuccess[name]}
}

// fixturesPeekSuccess are the fixtures of 2xx responses that hide a
// refusal: they are replayed with Policy.PeekSuccess.
var fixturesPeekSuccess = map[string]bool{
	"shopify-200-graphql-throttled.http":   true,
	"github-200-graphql-rate-limited.http": true,
	"anthropic-200-stream-overloaded.http": true,
}

// fixtureClassify classifies a fixture's response as its replay does.
func fixtureClassify(name string, req *http.Request, resp *http.Response) heed.Verdict {
	return policyOf(heed.New(nil, heed.WithPolicy(fixturePolicy(name))), req).Classify(req, resp, nil)
}

// fixtureRun replays one fixture through a Transport: the first request
// gets the fixture, rebased to the bubble's clock at that moment, and any
// later one a 200.
type fixtureRun struct {
	sends []time.Time
	first *http.Response
}

func (r *fixtureRun) transport(t *testing.T, name string) *heed.Transport {
	rt := fixtureRT(func(req *http.Request) (*http.Response, error) {
		now := time.Now()
		r.sends = append(r.sends, now)
		if len(r.sends) == 1 {
			resp := loadFixture(t, name)
			rebaseFixture(t, resp, now)
			resp.Request = req
			r.first = resp
			return resp, nil
		}
		return &http.Response{
			StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: hdr("Content-Type", "application/json"), Body: io.NopCloser(strings.NewReader(`{"ok":true}`)),
			ContentLength: 11, Request: req,
		}, nil
	})
	return heed.New(rt, heed.WithPolicy(fixturePolicy(name)))
}

func (tc fixtureCase) request(t *testing.T, ctx context.Context) *http.Request {
	req := newRequest(t, ctx, tc.method, tc.url, nil)
	if tc.key != "" {
		req.Header.Set("Idempotency-Key", tc.key)
	}
	return req
}

// TestFixtures replays every fixture through DefaultClassifier and a real
// Transport, on synctest's fake clock, and fails for a fixture without a
// row. Each bubble first moves its clock to fixtureEpoch, and each fixture
// is rebased so that its Date is the bubble's now (see rebaseFixture): the
// waits are then exactly those the vendor asked for. The policy has a
// constant backoff and no jitter, so every gap is exact.
func TestFixtures(t *testing.T) {
	names := fixtureNames(t)
	require.GreaterOrEqual(t, len(names), 12)
	for name := range fixtureCases {
		_, err := os.Stat(filepath.Join(fixtureDir, name))
		assert.NoError(t, err, "row %s has no fixture file", name)
	}
	for _, name := range names {
		tc, ok := fixtureCases[name]
		if !assert.True(t, ok, "fixture %s has no row in fixtureCases", name) {
			continue
		}
		t.Run(strings.TrimSuffix(name, ".http"), func(t *testing.T) {
			t.Run("class", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toFixtureEpoch(t)
					resp := loadFixture(t, name)
					rebaseFixture(t, resp, time.Now())
					v := fixtureClassify(name, tc.request(t, t.Context()), resp)
					// A body's wait (Wait, Source) is checked by what the
					// Transport then does, below.
					assert.Equal(t, heed.Verdict{Class: tc.class, Reason: tc.reason}, heed.Verdict{Class: v.Class, Reason: v.Reason}, "got %s %q", v.Class, v.Reason)
					assert.Equal(t, fixtureBody(t, name), readBody(t, resp), "the classifier leaves the body whole")
				})
			})
			switch tc.then {
			case thenWait:
				require.LessOrEqual(t, tc.wait, heed.DefaultMaxWait)
				t.Run("waits", func(t *testing.T) { fixtureWaits(t, name, tc) })
				t.Run("defers under a short deadline", func(t *testing.T) { fixtureDefers(t, name, tc, true) })
			case thenDefer:
				require.Greater(t, tc.wait, heed.DefaultMaxWait)
				t.Run("defers", func(t *testing.T) { fixtureDefers(t, name, tc, false) })
				t.Run("defers under a short deadline", func(t *testing.T) { fixtureDefers(t, name, tc, true) })
			case thenDeliver:
				t.Run("delivers", func(t *testing.T) { fixtureDelivers(t, name, tc) })
			case thenHold:
				t.Run("holds the scope", func(t *testing.T) { fixtureHolds(t, name, tc) })
			default:
				t.Fatalf("row %s: unknown then %q", name, tc.then)
			}
		})
	}
}

// fixtureWaits: the Transport waits exactly the hint (at least MinWait), or
// the backoff, then sends again and returns the 200.
func fixtureWaits(t *testing.T, name string, tc fixtureCase) {
	synctest.Test(t, func(t *testing.T) {
		toFixtureEpoch(t)
		var run fixtureRun
		tr := run.transport(t, name)
		resp, err := tr.RoundTrip(tc.request(t, t.Context()))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		readBody(t, resp)
		require.Len(t, run.sends, 2, "one retry")
		assert.Equal(t, tc.wait, run.sends[1].Sub(run.sends[0]), "gap between the two sends")
	})
}

// fixtureDefers: the wait does not fit, so the Transport returns a
// *DeferredError at once, eligible again at start + wait, after one send.
// With short, the context allows 500ms, less than any wait; else there is
// no deadline and the wait exceeds MaxWait.
func fixtureDefers(t *testing.T, name string, tc fixtureCase, short bool) {
	synctest.Test(t, func(t *testing.T) {
		toFixtureEpoch(t)
		ctx := t.Context()
		if short {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
		}
		var run fixtureRun
		tr := run.transport(t, name)
		start := time.Now()
		resp, err := tr.RoundTrip(tc.request(t, ctx))
		assert.Nil(t, resp)
		var de *heed.DeferredError
		require.ErrorAs(t, err, &de)
		assert.True(t, errors.Is(err, heed.ErrDeferred))
		assert.WithinDuration(t, start.Add(tc.wait), de.RetryAt, 0, "RetryAt = start + wait")
		assert.Equal(t, tc.wait, de.Wait)
		assert.Equal(t, 1, de.Attempts)
		assert.Equal(t, run.first.StatusCode, de.Status)
		assert.Equal(t, tc.reason, de.Reason)
		assert.Equal(t, tc.key, de.Key)
		assert.Zero(t, time.Since(start), "deferred at once")
		assert.Len(t, run.sends, 1, "nothing sent after deferring")
	})
}

// fixtureDelivers: one request, and the response comes back as is, body
// whole.
func fixtureDelivers(t *testing.T, name string, tc fixtureCase) {
	synctest.Test(t, func(t *testing.T) {
		toFixtureEpoch(t)
		var run fixtureRun
		tr := run.transport(t, name)
		start := time.Now()
		resp, err := tr.RoundTrip(tc.request(t, t.Context()))
		require.NoError(t, err)
		assert.Same(t, run.first, resp)
		assert.Len(t, run.sends, 1)
		assert.Zero(t, time.Since(start), "no wait")
		assert.Equal(t, fixtureBody(t, name), readBody(t, resp))
	})
}

// fixtureHolds: a served response that says a limit is spent is returned
// as is, and the scope's next request is sent only once the limit resets.
func fixtureHolds(t *testing.T, name string, tc fixtureCase) {
	synctest.Test(t, func(t *testing.T) {
		toFixtureEpoch(t)
		var run fixtureRun
		tr := run.transport(t, name)
		resp, err := tr.RoundTrip(tc.request(t, t.Context()))
		require.NoError(t, err)
		assert.Same(t, run.first, resp)
		assert.Equal(t, fixtureBody(t, name), readBody(t, resp))
		resp, err = tr.RoundTrip(tc.request(t, t.Context()))
		require.NoError(t, err)
		readBody(t, resp)
		require.Len(t, run.sends, 2)
		// Never before the reset; a gate's waiters go with a spread of at
		// most 20 ms after it.
		gap := run.sends[1].Sub(run.sends[0])
		assert.GreaterOrEqual(t, gap, tc.wait, "the next send waits for the reset")
		assert.LessOrEqual(t, gap, tc.wait+20*time.Millisecond)
	})
}

// Every fixture parses, names its source and carries a Date header; every
// one is a refusal but those that show a served response holding its scope.
func TestFixtureFilesWellFormed(t *testing.T) {
	for _, name := range fixtureNames(t) {
		resp := loadFixture(t, name)
		assert.NotEmpty(t, resp.Header.Get("Date"), name)
		if fixtureCases[name].then != thenHold && !fixturesPeekSuccess[name] {
			assert.GreaterOrEqual(t, resp.StatusCode, 400, name)
		}
		a := fixtureBody(t, name)
		b := fixtureBody(t, name)
		assert.NotEmpty(t, a, name)
		assert.Equal(t, a, b, "%s: each load is fresh", name)
	}
}
