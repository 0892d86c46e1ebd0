package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// Fast variants of the worker's policies: the same shape, short backoffs.
var (
	fastCreate = heed.Policy{Name: "create job", MaxAttempts: 3, MinWait: 50 * time.Millisecond, Backoff: heed.Constant(20 * time.Millisecond)}
	fastStatus = heed.Policy{Name: "job status", MaxElapsed: 5 * time.Second, MaxWait: 500 * time.Millisecond, MinWait: 50 * time.Millisecond, Backoff: heed.Constant(20 * time.Millisecond)}
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func newFake(t *testing.T) *fakeAPI {
	f := newFakeAPI()
	t.Cleanup(f.Close)
	return f
}

// runWorker is one run of the worker, as one process would make it: its
// own API client, its own deadline.
func runWorker(t *testing.T, store *Store, fake *fakeAPI, deadline time.Duration, create heed.Policy) Summary {
	t.Helper()
	api, err := NewAPI(fake.URL(), "test-token", create, fastStatus, zaptest.NewLogger(t))
	require.NoError(t, err)
	defer api.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var out bytes.Buffer
	w := &Worker{Store: store, API: api, Out: &out, RetryDelay: heed.Constant(100 * time.Millisecond)}
	w.Poller.MinWait = 50 * time.Millisecond
	w.Poller.Logger = zaptest.NewLogger(t)
	sum, err := w.Run(ctx)
	require.NoError(t, err)
	t.Logf("run:\n%s", out.String())
	return sum
}

func jobs(t *testing.T, s *Store) []row {
	rows, err := s.Jobs(context.Background())
	require.NoError(t, err)
	return rows
}

func count(reqs []apiRequest, method, path string) int {
	n := 0
	for _, r := range reqs {
		if r.Method == method && (path == "" || r.Path == path) {
			n++
		}
	}
	return n
}

func assertNoneEarly(t *testing.T, reqs []apiRequest) {
	t.Helper()
	for _, r := range reqs {
		assert.False(t, r.Early(), "%s %s at %s, before %s", r.Method, r.Path, r.At.Format(time.StampMilli), r.NotBefore.Format(time.StampMilli))
	}
}

func TestDeferredJobIsResumedOnlyWhenDue(t *testing.T) {
	store, fake := newStore(t), newFake(t)
	_, err := store.Add(context.Background(), "a red fox in snow")
	require.NoError(t, err)
	fake.Throttle(time.Second) // the first status check: 429, Retry-After: 1

	// Run 1: the job is created, then heed defers the 1s wait, longer than
	// the status policy's MaxWait of 500ms.
	sum := runWorker(t, store, fake, 5*time.Second, fastCreate)
	assert.Equal(t, Summary{Claimed: 1, Deferred: 1, NextDue: sum.NextDue}, sum)
	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, http.StatusTooManyRequests, reqs[1].Status)
	asked := reqs[1].At.Add(time.Second)
	rows := jobs(t, store)
	require.Len(t, rows, 1)
	assert.Equal(t, stateFollowing, rows[0].State)
	assert.Contains(t, rows[0].LastError, "heed: GET")
	assert.Equal(t, "gen_1", rows[0].RemoteID, "the job id is kept")
	assert.False(t, rows[0].RetryAt.Before(asked), "stored retry_at %s is before the %s the API asked", rows[0].RetryAt, asked)

	// Run 2, at once: nothing is due, nothing is sent.
	sum = runWorker(t, store, fake, time.Second, fastCreate)
	assert.Zero(t, sum.Claimed)
	assert.Len(t, fake.Requests(), 2, "no request before retry_at")

	// Run 3, once the stored time has come: the job is followed to the end.
	time.Sleep(time.Until(rows[0].RetryAt) + 10*time.Millisecond)
	sum = runWorker(t, store, fake, 5*time.Second, fastCreate)
	assert.Equal(t, Summary{Claimed: 1, Succeeded: 1}, sum)

	reqs = fake.Requests()
	assert.Equal(t, 1, fake.Created(), "one job created")
	assert.Equal(t, 1, count(reqs, http.MethodPost, ""), "one create sent")
	assertNoneEarly(t, reqs)
	rows = jobs(t, store)
	require.Len(t, rows, 1)
	assert.Equal(t, stateSucceeded, rows[0].State)
	assert.Equal(t, fake.URL()+"/files/gen_1.mp4", rows[0].Result, "one result")
}

func TestJobOutlivingTheRunIsStoredWithJobpollsNextCheck(t *testing.T) {
	store, fake := newStore(t), newFake(t)
	_, err := store.Add(context.Background(), "a slow render")
	require.NoError(t, err)
	fake.PollHint(3 * time.Second) // "check again in 3s", past this run's deadline

	sum := runWorker(t, store, fake, time.Second, fastCreate)

	assert.Equal(t, 1, sum.Deferred)
	reqs := fake.Requests()
	require.Len(t, reqs, 1, "created, and no check before the API's time")
	rows := jobs(t, store)
	require.Len(t, rows, 1)
	assert.Equal(t, "gen_1", rows[0].RemoteID)
	assert.Contains(t, rows[0].LastError, "jobpoll")
	assert.False(t, rows[0].RetryAt.Before(reqs[0].At.Add(3*time.Second)), "stored time is no earlier than the API asked")
}

func TestLostCreateAnswerIsResentWithTheSameKey(t *testing.T) {
	store, fake := newStore(t), newFake(t)
	_, err := store.Add(context.Background(), "waves at dusk")
	require.NoError(t, err)
	fake.LoseCreates(1)

	sum := runWorker(t, store, fake, 5*time.Second, fastCreate)

	assert.Equal(t, 1, sum.Succeeded)
	assert.Equal(t, 1, fake.Created(), "the API deduped the resend by key")
	var keys []string
	for _, r := range fake.Requests() {
		if r.Method == http.MethodPost {
			keys = append(keys, r.Key)
		}
	}
	require.GreaterOrEqual(t, len(keys), 2)
	for _, k := range keys {
		assert.Equal(t, jobs(t, store)[0].Key, k)
	}
	assertNoneEarly(t, fake.Requests())
}

func TestLostCreateIsReconciledByKeyOnTheNextRun(t *testing.T) {
	store, fake := newStore(t), newFake(t)
	_, err := store.Add(context.Background(), "a lighthouse in fog")
	require.NoError(t, err)
	fake.LoseCreates(100)
	twoTries := fastCreate
	twoTries.MaxAttempts = 2

	// Run 1: the job is made, every answer is lost; the row stays "creating".
	sum := runWorker(t, store, fake, 5*time.Second, twoTries)
	assert.Equal(t, Summary{Claimed: 1, NextDue: sum.NextDue}, sum)
	rows := jobs(t, store)
	require.Len(t, rows, 1)
	assert.Equal(t, stateCreating, rows[0].State)
	assert.Empty(t, rows[0].RemoteID)
	assert.Equal(t, 1, fake.Created())
	fake.LoseCreates(0)
	before := len(fake.Requests())

	// Run 2, when due: it asks the API by key and follows that job.
	time.Sleep(time.Until(rows[0].RetryAt) + 10*time.Millisecond)
	sum = runWorker(t, store, fake, 5*time.Second, fastCreate)

	assert.Equal(t, 1, sum.Succeeded)
	run2 := fake.Requests()[before:]
	assert.Zero(t, count(run2, http.MethodPost, ""), "no create in run 2")
	assert.Equal(t, 1, count(run2, http.MethodGet, "/v1/jobs"), "one look-up by key")
	assert.Equal(t, 1, fake.Created())
	rows = jobs(t, store)
	assert.Equal(t, stateSucceeded, rows[0].State)
	assert.Equal(t, "gen_1", rows[0].RemoteID)
}

func TestOnlyDueUnleasedJobsAreClaimed(t *testing.T) {
	store := newStore(t)
	ctx := context.Background()
	later, err := store.Add(ctx, "later")
	require.NoError(t, err)
	now, err := store.Add(ctx, "now")
	require.NoError(t, err)
	require.NoError(t, store.deferUntil(ctx, later, time.Now().Add(time.Hour), "test"))

	j, ok, err := store.claim(ctx, time.Now(), time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, now, j.ID)

	_, ok, err = store.claim(ctx, time.Now(), time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "the due job is leased, the other not due")

	_, ok, err = store.claim(ctx, time.Now().Add(2*time.Minute), time.Minute)
	require.NoError(t, err)
	assert.True(t, ok, "an expired lease frees the job for another run")
}

func TestRetryAtIsNeverRoundedDown(t *testing.T) {
	at := time.Unix(100, 1)
	assert.Equal(t, int64(100001), ms(at))
	assert.Equal(t, int64(100000), ms(time.Unix(100, 0)))
	assert.False(t, time.UnixMilli(ms(at)).Before(at))
}

func TestRunWithBaseURLDefersAndExits75(t *testing.T) {
	fake := newFake(t)
	fake.Throttle(time.Minute)
	db := filepath.Join(t.TempDir(), "jobs.db")
	var out, errOut bytes.Buffer

	code := run(context.Background(), []string{"-base-url", fake.URL(), "-db", db, "-prompt", "a cat", "-deadline", "2s"}, &out, &errOut)

	require.Equal(t, exitDeferred, code, errOut.String())
	assert.Regexp(t, `retry-at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$`, out.String())
	assert.Contains(t, out.String(), "deferred until")
	assert.Equal(t, 1, fake.Created())
}

func TestRunDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), nil, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	s := out.String()
	assert.Contains(t, s, "deferred until")
	assert.Contains(t, s, "requests: 0; claimed 0")
	assert.Contains(t, s, "succeeded: "+"http://127.0.0.1:")
	assert.Contains(t, s, "jobs created by the API: 1; requests earlier than the API asked: 0")
}
