package heedriver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedriver"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// riverClient is what the tests use of a *river.Client, whatever its
// driver's transaction type.
type riverClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	QueueGet(ctx context.Context, name string) (*rivertype.Queue, error)
	QueuePause(ctx context.Context, name string, opts *river.QueuePauseOpts) error
	Subscribe(kinds ...river.EventKind) (<-chan *river.Event, func())
}

// database is a migrated River database, and what makes clients on it.
type database struct {
	newClient  func(cfg *river.Config) (riverClient, error)
	middleware func(opts ...heedriver.Option) rivertype.Middleware
	addResume  func(workers *river.Workers)
}

// backend names a River driver and opens a new database for it.
type backend struct {
	name string
	open func(t *testing.T) *database
}

// backends are the drivers every behaviour test runs on: SQLite, embedded,
// and a real PostgreSQL the tests start.
var backends = []backend{
	{name: "sqlite", open: openSQLite},
	{name: "postgres", open: openPostgres},
}

// openSQLite returns a River database in a new SQLite file, on one
// connection, as riversqlite advises.
func openSQLite(t *testing.T) *database {
	t.Helper()
	path := filepath.Join(t.TempDir(), "river.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return migrated(t, riversqlite.New(db))
}

// openPostgres returns a River database in a new PostgreSQL database.
func openPostgres(t *testing.T) *database {
	t.Helper()
	return migrated(t, riverpgxv5.New(newPostgresPool(t)))
}

// migrated runs River's migrations with driver and returns the database.
func migrated[TTx any](t *testing.T, driver riverdriver.Driver[TTx]) *database {
	t.Helper()
	migrator, err := rivermigrate.New(driver, nil)
	require.NoError(t, err)
	_, err = migrator.Migrate(context.Background(), rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	return &database{
		newClient: func(cfg *river.Config) (riverClient, error) { return river.NewClient(driver, cfg) },
		middleware: func(opts ...heedriver.Option) rivertype.Middleware {
			return heedriver.New[TTx](opts...)
		},
		addResume: func(workers *river.Workers) { river.AddWorker(workers, &heedriver.ResumeWorker[TTx]{}) },
	}
}

// apiQueue is the queue of the jobs that call the API; the default queue
// takes ResumeArgs jobs.
const apiQueue = "api"

// clientSetup says how startClient makes a client.
type clientSetup struct {
	api         *fakeAPI
	policy      heed.Policy // the heed policy of the worker's requests
	options     []heedriver.Option
	maxAttempts int // River's MaxAttempts; default 3
	// failAfterCall makes the worker fail once per job after a 2xx, as
	// a worker that crashes after its call landed.
	failAfterCall bool
	retryIn       time.Duration // how long after a failure River retries; default 10 ms
}

// startClient starts a River client on db working callArgs jobs in apiQueue
// and ResumeArgs jobs in the default queue, polling every 20 ms, retrying a
// failed job s.retryIn (10 ms) later. It stops when t ends.
func startClient(t *testing.T, db *database, s clientSetup) (riverClient, *recorder) {
	t.Helper()
	inner := &http.Transport{DisableKeepAlives: true} // a lost response is not resent by net/http
	t.Cleanup(inner.CloseIdleConnections)
	rec := &recorder{}
	workers := river.NewWorkers()
	river.AddWorker(workers, &callWorker{
		client:        &http.Client{Transport: heed.New(inner, heed.WithPolicy(s.policy))},
		base:          s.api.srv.URL,
		rec:           rec,
		failAfterCall: s.failAfterCall,
	})
	db.addResume(workers)
	client, err := db.newClient(&river.Config{
		FetchCooldown:     10 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
		MaxAttempts:       cmpOr(s.maxAttempts, 3),
		Middleware:        []rivertype.Middleware{db.middleware(s.options...)},
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: 2},
			apiQueue:           {MaxWorkers: 2},
		},
		RetryPolicy: retrySoon(cmpOr(s.retryIn, 10*time.Millisecond)),
		TestOnly:    true,
		Workers:     workers,
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(ctx))
	})
	return client, rec
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// retrySoon retries a failed job that long after it failed.
type retrySoon time.Duration

func (r retrySoon) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Duration(r)) }

// callArgs is a job that POSTs to Path of the fake API.
type callArgs struct {
	Path string `json:"path"`
}

func (callArgs) Kind() string { return "heedriver_test_call" }

// callWorker POSTs through heed to the fake API and fails on any status
// but 2xx, with a *heedriver.TerminalError when heed says no retry helps.
type callWorker struct {
	river.WorkerDefaults[callArgs]
	client        *http.Client
	base          string
	rec           *recorder
	failAfterCall bool
	failed        sync.Map // job IDs failed after their call
}

func (w *callWorker) Work(ctx context.Context, job *river.Job[callArgs]) error {
	wk := w.rec.begin(job.JobRow)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.base+job.Args.Path, strings.NewReader(`{"n":1}`))
	if err != nil {
		return err
	}
	resp, err := w.client.Do(req)
	w.rec.end(wk, err)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if err := heedriver.Terminal(resp); err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if _, failed := w.failed.LoadOrStore(job.ID, true); w.failAfterCall && !failed {
		return errors.New("lost after the call")
	}
	return nil
}

// work is one call of callWorker.Work as the worker saw it.
type work struct {
	JobID       int64
	Attempt     int
	MaxAttempts int
	Snoozes     int64     // the job's metadata "snoozes"
	At          time.Time // when Work began
	RetryAt     time.Time // the *heed.DeferredError's, zero when not deferred
	Gate        bool      // deferred at heed's gate, nothing sent
}

// recorder keeps every work, in order.
type recorder struct {
	mu    sync.Mutex
	works []*work
}

func (r *recorder) begin(job *rivertype.JobRow) *work {
	var meta struct {
		Snoozes int64 `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	w := &work{JobID: job.ID, Attempt: job.Attempt, MaxAttempts: job.MaxAttempts, Snoozes: meta.Snoozes, At: time.Now()}
	r.mu.Lock()
	r.works = append(r.works, w)
	r.mu.Unlock()
	return w
}

func (r *recorder) end(w *work, err error) {
	var de *heed.DeferredError
	if errors.As(err, &de) {
		r.mu.Lock()
		w.RetryAt, w.Gate = de.RetryAt, de.Attempts == 0
		r.mu.Unlock()
	}
}

// of returns the works of job id.
func (r *recorder) of(id int64) []work {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []work
	for _, w := range r.works {
		if w.JobID == id {
			out = append(out, *w)
		}
	}
	return out
}

// fakeAPI is a loopback API that applies each idempotency key at most once:
// a request whose key it applied before gets 200 and changes nothing. What
// it answers a key's n-th request (0-based) otherwise is up to script.
type fakeAPI struct {
	srv    *httptest.Server
	script func(n int) answer

	mu      sync.Mutex
	reqs    []apiRequest
	seen    map[string]int
	applied map[string]int
}

// answer is what the fake API does with one request.
type answer struct {
	status     int  // the status to answer
	retryAfter int  // Retry-After, in seconds, when not 0
	apply      bool // apply the request: status 201 unless drop
	drop       bool // after applying, close the connection unanswered
}

// apiRequest is one request the fake API received.
type apiRequest struct {
	At   time.Time
	Path string
	Key  string
}

// newFakeAPI starts a fake API, closed when t ends.
func newFakeAPI(t *testing.T, script func(n int) answer) *fakeAPI {
	t.Helper()
	a := &fakeAPI{script: script, seen: map[string]int{}, applied: map[string]int{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get(keyHeader)
	a.mu.Lock()
	a.reqs = append(a.reqs, apiRequest{At: time.Now(), Path: r.URL.Path, Key: key})
	n := a.seen[key]
	a.seen[key] = n + 1
	if key != "" && a.applied[key] > 0 {
		a.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	}
	ans := a.script(n)
	if ans.apply && key != "" {
		a.applied[key]++
	}
	a.mu.Unlock()
	switch {
	case ans.drop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	case ans.apply:
		w.WriteHeader(http.StatusCreated)
	default:
		if ans.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(ans.retryAfter))
		}
		w.WriteHeader(ans.status)
	}
}

// requests returns the requests received so far, of path if not "".
func (a *fakeAPI) requests(path string) []apiRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []apiRequest
	for _, r := range a.reqs {
		if path == "" || r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// timesApplied returns how many times key was applied.
func (a *fakeAPI) timesApplied(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied[key]
}

// throttleFirst answers the first request of all 429 with Retry-After:
// after, and applies every other.
func throttleFirst(after int) func(n int) answer {
	calls := 0 // the fake API calls its script under its lock
	return func(int) answer {
		calls++
		if calls == 1 {
			return answer{status: http.StatusTooManyRequests, retryAfter: after}
		}
		return answer{apply: true}
	}
}

// throttleOnce answers a key's first request 429 with Retry-After: after,
// and applies the next.
func throttleOnce(after int) func(n int) answer {
	return func(n int) answer {
		if n == 0 {
			return answer{status: http.StatusTooManyRequests, retryAfter: after}
		}
		return answer{apply: true}
	}
}

// keyHeader is the idempotency-key header the fake API honours, named in
// the Policy of every test that expects heed to add a key.
const keyHeader = "Idempotency-Key"

// deferringPolicy defers any wait over 100 ms: every Retry-After the fake
// API gives. It keys every POST.
var deferringPolicy = heed.Policy{MaxWait: 100 * time.Millisecond, KeyHeader: keyHeader}

// waitJob polls job id until it is in state, failing t after limit.
func waitJob(t *testing.T, c riverClient, id int64, state rivertype.JobState, limit time.Duration) *rivertype.JobRow {
	t.Helper()
	var job *rivertype.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = c.JobGet(context.Background(), id)
		require.NoError(t, err)
		return job.State == state
	}, limit, 10*time.Millisecond, "job %d never reached state %s", id, state)
	return job
}

// insert inserts a callArgs job for path in apiQueue.
func insert(t *testing.T, c riverClient, path string) int64 {
	t.Helper()
	res, err := c.Insert(context.Background(), callArgs{Path: path}, &river.InsertOpts{Queue: apiQueue})
	require.NoError(t, err)
	return res.Job.ID
}

// snoozes returns the metadata "snoozes" of job.
func snoozes(t *testing.T, job *rivertype.JobRow) int64 {
	t.Helper()
	var meta struct {
		Snoozes int64 `json:"snoozes"`
	}
	require.NoError(t, json.Unmarshal(job.Metadata, &meta))
	return meta.Snoozes
}
