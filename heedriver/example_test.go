package heedriver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedriver"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite"
)

// CreateArgs is a job that creates a report through an API.
type CreateArgs struct {
	Name string `json:"name"`
}

func (CreateArgs) Kind() string { return "create_report" }

// CreateWorker POSTs the report. It does nothing special for heed: a
// deferral is returned as the error it is, and the Middleware snoozes it.
type CreateWorker struct {
	river.WorkerDefaults[CreateArgs]
	Client *http.Client
	URL    string
}

func (w *CreateWorker) Work(ctx context.Context, job *river.Job[CreateArgs]) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/v1/reports", strings.NewReader(`{"name":"`+job.Args.Name+`"}`))
	if err != nil {
		return err
	}
	resp, err := w.Client.Do(req)
	var de *heed.DeferredError
	if errors.As(err, &de) {
		fmt.Printf("attempt %d: deferred, %s, the API asked for %s\n", job.Attempt, de.Reason, de.Wait.Round(time.Second))
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := heedriver.Terminal(resp); err != nil {
		return err
	}
	fmt.Printf("attempt %d: %s\n", job.Attempt, resp.Status)
	return nil
}

// River on SQLite, embedded, in a file of a temporary directory: the API
// answers the first POST 429 with Retry-After: 1, too long for the job's
// MaxWait, so heed defers, the Middleware snoozes the job for a second
// without spending an attempt, and River works it again.
func Example() {
	ctx := context.Background()

	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer api.Close()

	dir, err := os.MkdirTemp("", "heedriver-example-")
	check(err)
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "river.db"))
	check(err)
	defer db.Close()
	db.SetMaxOpenConns(1) // as riversqlite advises
	driver := riversqlite.New(db)
	migrator, err := rivermigrate.New(driver, nil)
	check(err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	check(err)

	tr := heed.New(&http.Transport{}, heed.WithPolicy(heed.Policy{MaxWait: 100 * time.Millisecond}))
	defer tr.CloseIdleConnections()
	workers := river.NewWorkers()
	river.AddWorker(workers, &CreateWorker{Client: &http.Client{Transport: tr}, URL: api.URL})
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     10 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
		Middleware:        []rivertype.Middleware{heedriver.New[*sql.Tx](heedriver.WithCancelTerminal(true))},
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}},
		Workers:           workers,
	})
	check(err)
	completed, unsubscribe := client.Subscribe(river.EventKindJobCompleted)
	defer unsubscribe()
	check(client.Start(ctx))
	defer func() { check(client.Stop(ctx)) }()

	_, err = client.Insert(ctx, CreateArgs{Name: "q3"}, nil)
	check(err)
	select {
	case ev := <-completed:
		var meta struct{ Snoozes int }
		check(json.Unmarshal(ev.Job.Metadata, &meta))
		fmt.Printf("completed: attempt %d of %d, %d snooze, %d errors\n", ev.Job.Attempt, ev.Job.MaxAttempts, meta.Snoozes, len(ev.Job.Errors))
	case <-time.After(30 * time.Second):
		fmt.Println("not completed")
	}
	// Output:
	// attempt 1: deferred, rate limited, the API asked for 1s
	// attempt 1: 201 Created
	// completed: attempt 1 of 25, 1 snooze, 0 errors
}

// check stops the example on an error.
func check(err error) {
	if err != nil {
		panic(err)
	}
}

// A worker hands back a response no retry fixes as a *TerminalError, which
// a Middleware made with WithCancelTerminal(true) turns into a cancel.
func ExampleTerminal() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such account", http.StatusNotFound)
	}))
	defer api.Close()
	tr := heed.New(&http.Transport{})
	defer tr.CloseIdleConnections()

	resp, err := (&http.Client{Transport: tr}).Get(api.URL + "/v1/accounts/42?token=secret")
	check(err)
	defer resp.Body.Close()
	err = heedriver.Terminal(resp)
	var te *heedriver.TerminalError
	fmt.Println(errors.As(err, &te), te.Status, te.Reason)
	fmt.Println(strings.Replace(err.Error(), api.URL, "http://api", 1))
	// Output:
	// true 404 not found
	// heedriver: GET http://api/v1/accounts/42: terminal: not found (status 404)
}
