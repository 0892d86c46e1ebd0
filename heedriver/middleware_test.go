package heedriver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedriver"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkMapsErrors: what Work makes of each error Work's inner call
// returns, with and without WithCancelTerminal.
func TestWorkMapsErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	term := &heedriver.TerminalError{Status: 404, Reason: "not found"}
	past := &heed.DeferredError{RetryAt: time.Now().Add(-time.Second)}
	cases := []struct {
		name       string
		err        error
		cancelTerm bool
		check      func(t *testing.T, got error)
	}{
		{"nil", nil, false, func(t *testing.T, got error) { assert.NoError(t, got) }},
		{"plain", boom, true, func(t *testing.T, got error) { assert.Same(t, boom, got) }},
		{"terminal, option off", term, false, func(t *testing.T, got error) { assert.Same(t, term, got) }},
		{"terminal, option on", term, true, func(t *testing.T, got error) {
			var ce *river.JobCancelError
			require.ErrorAs(t, got, &ce)
			assert.ErrorIs(t, got, term)
		}},
		{"terminal beside a deferral, option on", errors.Join(term, &heed.DeferredError{RetryAt: time.Now().Add(time.Hour)}), true, func(t *testing.T, got error) {
			var ce *river.JobCancelError
			assert.ErrorAs(t, got, &ce)
			var se *river.JobSnoozeError
			assert.False(t, errors.As(got, &se), "a job no retry fixes is not snoozed")
		}},
		{"already a cancel", river.JobCancel(&heed.DeferredError{RetryAt: time.Now().Add(time.Hour)}), false, func(t *testing.T, got error) {
			var se *river.JobSnoozeError
			assert.False(t, errors.As(got, &se))
		}},
		{"already a snooze", river.JobSnooze(time.Minute), true, func(t *testing.T, got error) {
			var se *river.JobSnoozeError
			require.ErrorAs(t, got, &se)
			assert.Equal(t, time.Minute, se.Duration)
		}},
		{"deferred, RetryAt past", past, false, func(t *testing.T, got error) {
			var se *river.JobSnoozeError
			require.ErrorAs(t, got, &se)
			assert.Zero(t, se.Duration)
			assert.ErrorIs(t, got, heed.ErrDeferred)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mw := heedriver.New[any](heedriver.WithCancelTerminal(tc.cancelTerm))
			got := mw.Work(context.Background(), &rivertype.JobRow{ID: 1, Kind: "k"}, func(context.Context) error { return tc.err })
			tc.check(t, got)
		})
	}
}

// TestWorkSnoozeDuration: the snooze ends no earlier than RetryAt, even
// stored rounded to the millisecond, and at most 2 ms after it; one whose
// RetryAt has passed is not snoozed.
func TestWorkSnoozeDuration(t *testing.T) {
	t.Parallel()
	mw := heedriver.New[any]()
	for _, wait := range []time.Duration{time.Nanosecond, 400 * time.Microsecond, time.Millisecond, 1500 * time.Millisecond, 2*time.Second + 999*time.Microsecond, time.Hour} {
		retryAt := time.Now().Add(wait)
		before := time.Now()
		got := mw.Work(context.Background(), &rivertype.JobRow{ID: 1}, func(context.Context) error {
			return &heed.DeferredError{RetryAt: retryAt}
		})
		after := time.Now()
		var se *river.JobSnoozeError
		require.ErrorAs(t, got, &se)
		require.ErrorIs(t, got, heed.ErrDeferred, "the deferral stays visible")
		if se.Duration == 0 {
			// RetryAt had passed: available at once, fetched later still.
			assert.False(t, retryAt.After(after), "wait %s: no snooze", wait)
			continue
		}
		// River sets scheduled_at = now + Duration, now no earlier than after.
		earliest := after.Add(se.Duration).Round(time.Millisecond)
		assert.False(t, earliest.Before(retryAt), "wait %s: scheduled %s before RetryAt", wait, retryAt.Sub(earliest))
		assert.LessOrEqual(t, before.Add(se.Duration).Sub(retryAt), 2*time.Millisecond, "wait %s", wait)
	}
}

// TestWorkKey: the key heed puts on a job's POSTs is a function of the
// job's kind, ID and creation time: the same for the same job, whichever
// Work call sends it, and different when any of the three differs.
func TestWorkKey(t *testing.T) {
	t.Parallel()
	keys := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
	}))
	defer srv.Close()
	tr := heed.New(nil, heed.WithPolicy(heed.Policy{KeyHeader: keyHeader}))
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	mw := heedriver.New[any]()
	keyOf := func(job *rivertype.JobRow) string {
		require.NoError(t, mw.Work(context.Background(), job, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/x", strings.NewReader("{}"))
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			return resp.Body.Close()
		}))
		return <-keys
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	job := &rivertype.JobRow{ID: 7, Kind: "send", CreatedAt: created}
	k := keyOf(job)
	require.Len(t, k, 36)
	assert.Equal(t, k, keyOf(&rivertype.JobRow{ID: 7, Kind: "send", CreatedAt: created.In(time.FixedZone("x", 3600)), Attempt: 3}), "same job, later attempt")
	assert.NotEqual(t, k, keyOf(&rivertype.JobRow{ID: 8, Kind: "send", CreatedAt: created}), "another ID")
	assert.NotEqual(t, k, keyOf(&rivertype.JobRow{ID: 7, Kind: "mail", CreatedAt: created}), "another kind")
	assert.NotEqual(t, k, keyOf(&rivertype.JobRow{ID: 7, Kind: "send", CreatedAt: created.Add(time.Millisecond)}), "a reused ID")
}

// TestInsertManyResumeAvailable: the Middleware stores a scheduled
// ResumeArgs job available, scheduled_at kept, and leaves others alone.
func TestInsertManyResumeAvailable(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(time.Minute)
	resume := &rivertype.JobInsertParams{Kind: heedriver.ResumeArgs{}.Kind(), State: rivertype.JobStateScheduled, ScheduledAt: &at}
	other := &rivertype.JobInsertParams{Kind: "other", State: rivertype.JobStateScheduled, ScheduledAt: &at}
	called := false
	_, err := heedriver.New[any]().InsertMany(context.Background(), []*rivertype.JobInsertParams{resume, other},
		func(context.Context) ([]*rivertype.JobInsertResult, error) { called = true; return nil, nil })
	require.NoError(t, err)
	assert.True(t, called)
	assert.Equal(t, rivertype.JobStateAvailable, resume.State)
	assert.Equal(t, at, *resume.ScheduledAt)
	assert.Equal(t, rivertype.JobStateScheduled, other.State)
}

// TestTerminal: Terminal says Terminal exactly where heed.DefaultClassifier
// does, and its error names no query or userinfo.
func TestTerminal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		reason string // "" when Terminal returns nil
	}{
		{200, ""}, {201, ""}, {304, ""},
		{400, "client error"}, {401, "unauthorized"}, {402, "billing"}, {403, "forbidden"},
		{404, "not found"}, {422, "unprocessable"}, {501, "not implemented"},
		{408, ""}, {429, ""}, {500, ""}, {502, ""}, {503, ""},
	}
	for _, tc := range cases {
		req := httptest.NewRequest(http.MethodPost, "https://user:secret@api.example/v1/items?token=abc#frag", nil)
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: http.NoBody, Request: req}
		err := heedriver.Terminal(resp)
		if tc.reason == "" {
			assert.NoError(t, err, "status %d", tc.status)
			continue
		}
		var te *heedriver.TerminalError
		require.ErrorAs(t, err, &te, "status %d", tc.status)
		assert.Equal(t, tc.status, te.Status)
		assert.Equal(t, tc.reason, te.Reason)
		assert.Equal(t, "https://api.example/v1/items", te.URL)
		assert.Equal(t, "heedriver: POST https://api.example/v1/items: terminal: "+tc.reason+" (status "+strconv.Itoa(tc.status)+")", err.Error())
	}
	// A 403 that is a throttle is no terminal failure.
	for name, h := range map[string]http.Header{
		"Retry-After":              {"Retry-After": {"30"}},
		"X-RateLimit-Remaining: 0": {"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)}},
		"GitHub secondary limit":   {"Content-Type": {"application/json"}},
	} {
		body := `{"message":"forbidden"}`
		if name == "GitHub secondary limit" {
			body = `{"message":"You have exceeded a secondary rate limit."}`
		}
		req := httptest.NewRequest(http.MethodPost, "https://api.example/v1/items", nil)
		resp := &http.Response{StatusCode: http.StatusForbidden, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}
		assert.NoError(t, heedriver.Terminal(resp), "403 with %s", name)
	}
	assert.NoError(t, heedriver.Terminal(nil))
	err := heedriver.Terminal(&http.Response{StatusCode: 404, Header: http.Header{}, Body: http.NoBody})
	assert.EqualError(t, err, "heedriver: terminal: not found (status 404)", "no request")
	assert.EqualError(t, &heedriver.TerminalError{Reason: "account closed"}, "heedriver: terminal: account closed")
}

// TestPauseOnlyForServerWait: with WithPauseQueue, Work pauses the job's
// queue only for a deferral that carries the server's wait. Outside a
// River client the pause fails, and its error, joined to the snooze, shows
// that Work tried.
func TestPauseOnlyForServerWait(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		reason string
		queue  string
		pause  bool
	}{
		{429, "rate limited", "api", true},
		{503, "unavailable", "api", true},
		{503, "slow down", "api", true},
		{403, "rate limited", "api", true},  // GitHub
		{400, "rate limited", "api", true},  // AWS
		{529, "overloaded", "api", true},    // Anthropic
		{0, "cooling down", "api", true},    // heed's gate, held for the server
		{500, "cooling down", "api", true},  // the hold found on a retry
		{429, "should retry", "api", true},  // a 429 Stripe says to retry
		{500, "server error", "api", false}, // heed's backoff
		{502, "should retry", "api", false},
		{0, "eof", "api", false},
		{0, "queue full", "api", false},
		{429, "queue full", "api", false},
		{0, "concurrency limit", "api", false},
		{429, "pacing", "api", false},
		{429, "rate limited", "resume", false}, // the resume queue never pauses
	}
	mw := heedriver.New[any](heedriver.WithPauseQueue("resume"))
	for _, tc := range cases {
		de := &heed.DeferredError{Status: tc.status, Reason: tc.reason, RetryAt: time.Now().Add(time.Hour)}
		got := mw.Work(context.Background(), &rivertype.JobRow{ID: 1, Kind: "k", Queue: tc.queue}, func(context.Context) error { return de })
		var se *river.JobSnoozeError
		require.ErrorAs(t, got, &se, "%d %s", tc.status, tc.reason)
		assert.ErrorIs(t, got, heed.ErrDeferred)
		assert.Equal(t, tc.pause, strings.Contains(got.Error(), "heedriver: pausing queue"), "%d %q in queue %s: pause tried", tc.status, tc.reason, tc.queue)
	}
}

// TestWorkKeyPerWrite: under a job's key each write's key follows the
// write, not its place: two writes of a job with different bodies keep
// their keys when a later attempt sends them in the other order or skips
// one done before, and a second identical send in one attempt (a retry
// made above heed) is another write with another key. A Transport whose
// policy names no KeyHeader adds none.
func TestWorkKeyPerWrite(t *testing.T) {
	t.Parallel()
	keys := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get(keyHeader)
	}))
	defer srv.Close()
	keyed := heed.New(nil, heed.WithPolicy(heed.Policy{KeyHeader: keyHeader}))
	defer keyed.CloseIdleConnections()
	plain := heed.New(nil)
	defer plain.CloseIdleConnections()
	job := &rivertype.JobRow{ID: 7, Kind: "send", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	attempt := func(tr http.RoundTripper, bodies ...string) []string {
		var out []string
		require.NoError(t, heedriver.New[any]().Work(context.Background(), job, func(ctx context.Context) error {
			for _, b := range bodies {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/charges", strings.NewReader(b))
				require.NoError(t, err)
				resp, err := (&http.Client{Transport: tr}).Do(req)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				out = append(out, <-keys)
			}
			return nil
		}))
		return out
	}
	first := attempt(keyed, `{"amount":1}`, `{"amount":2}`)
	require.Len(t, first, 2)
	assert.NotEqual(t, first[0], first[1], "two writes of a job share a key")
	assert.Equal(t, []string{first[1], first[0]}, attempt(keyed, `{"amount":2}`, `{"amount":1}`), "the other order")
	assert.Equal(t, []string{first[1]}, attempt(keyed, `{"amount":2}`), "the first write skipped, done")
	twice := attempt(keyed, `{"amount":1}`, `{"amount":1}`)
	assert.Equal(t, first[0], twice[0])
	assert.NotEqual(t, twice[0], twice[1], "a second identical send is another write")
	assert.Equal(t, []string{""}, attempt(plain, `{"amount":1}`), "no KeyHeader, no key")
}
