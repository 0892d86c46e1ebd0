package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver: pure Go, an embedded file
)

// Job states, as stored.
const (
	stateNew       = "new"       // enqueued; nothing sent yet
	stateCreating  = "creating"  // a create was sent; its answer may be lost
	stateFollowing = "following" // the API's job id is known; poll it
	stateSucceeded = "succeeded" // done, result stored
	stateFailed    = "failed"    // done, error stored
)

// job is one row of the jobs table: a piece of work and where it stands.
type job struct {
	ID       int64
	Prompt   string
	Key      string // Idempotency-Key, chosen at enqueue time and never changed
	RemoteID string // the API's job id, once known
	State    string
	Attempts int // runs that failed on this job without a time to come back
}

// Store keeps jobs in SQLite, so that a deferred job survives the process
// and a later run claims it only when its time has come.
type Store struct{ db *sql.DB }

// schema is the jobs table. Times are Unix milliseconds.
const schema = `
CREATE TABLE IF NOT EXISTS jobs (
	id          INTEGER PRIMARY KEY,
	prompt      TEXT    NOT NULL,
	idem_key    TEXT    NOT NULL UNIQUE,
	remote_id   TEXT    NOT NULL DEFAULT '',
	state       TEXT    NOT NULL,
	retry_at    INTEGER NOT NULL, -- not claimed before this time
	lease_until INTEGER NOT NULL DEFAULT 0, -- claimed by a run until this time
	attempts    INTEGER NOT NULL DEFAULT 0,
	result      TEXT    NOT NULL DEFAULT '',
	last_error  TEXT    NOT NULL DEFAULT '',
	updated_at  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs (state, retry_at);
`

// OpenStore opens (creating if needed) the database file at path.
func OpenStore(path string) (*Store, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("mediajob: creating schema in %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// ms is t in Unix milliseconds, rounded up: a stored RetryAt is never
// earlier than the one given.
func ms(t time.Time) int64 {
	n := t.UnixNano()
	return n/1e6 + min(n%1e6, 1)
}

// Add enqueues a job for prompt with a fresh idempotency key, due now.
func (s *Store) Add(ctx context.Context, prompt string) (int64, error) {
	now := ms(time.Now())
	res, err := s.db.ExecContext(ctx, `INSERT INTO jobs (prompt, idem_key, state, retry_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		prompt, newKey(), stateNew, now, now)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// claim takes the next job whose time has come and that no other run
// holds, leasing it to this run until now+lease. ok is false when no job
// is due.
func (s *Store) claim(ctx context.Context, now time.Time, lease time.Duration) (j job, ok bool, err error) {
	t := ms(now)
	err = s.db.QueryRowContext(ctx, `
UPDATE jobs SET lease_until = ?, updated_at = ?
WHERE id = (
	SELECT id FROM jobs
	WHERE state IN (?, ?, ?) AND retry_at <= ? AND lease_until <= ?
	ORDER BY retry_at, id LIMIT 1)
RETURNING id, prompt, idem_key, remote_id, state, attempts`,
		ms(now.Add(lease)), t, stateNew, stateCreating, stateFollowing, t, t,
	).Scan(&j.ID, &j.Prompt, &j.Key, &j.RemoteID, &j.State, &j.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return job{}, false, nil
	}
	return j, err == nil, err
}

// nextDue returns the earliest time an unfinished job becomes due, if any.
func (s *Store) nextDue(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT min(max(retry_at, lease_until)) FROM jobs WHERE state IN (?, ?, ?)`,
		stateNew, stateCreating, stateFollowing).Scan(&at)
	if err != nil || !at.Valid {
		return time.Time{}, false, err
	}
	return time.UnixMilli(at.Int64), true, nil
}

// setState records a job's progress while the run still holds it.
func (s *Store) setState(ctx context.Context, id int64, state, remoteID string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET state = ?, remote_id = ?, updated_at = ? WHERE id = ?`,
		state, remoteID, ms(time.Now()), id)
	return err
}

// deferUntil releases a job that may not be touched before at.
func (s *Store) deferUntil(ctx context.Context, id int64, at time.Time, why string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET retry_at = ?, lease_until = 0, last_error = ?, updated_at = ? WHERE id = ?`,
		ms(at), why, ms(time.Now()), id)
	return err
}

// retryLater releases a job whose run failed without a time to come back,
// due again at at. After maxAttempts such runs it fails.
func (s *Store) retryLater(ctx context.Context, id int64, attempts int, at time.Time, why string) error {
	state := ""
	if attempts >= maxAttempts {
		state = stateFailed
	}
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET attempts = ?, state = coalesce(nullif(?, ''), state), retry_at = ?, lease_until = 0, last_error = ?, updated_at = ? WHERE id = ?`,
		attempts, state, ms(at), why, ms(time.Now()), id)
	return err
}

// finish records a job's end: its result, or its error.
func (s *Store) finish(ctx context.Context, id int64, state, result, why string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET state = ?, result = ?, last_error = ?, lease_until = 0, updated_at = ? WHERE id = ?`,
		state, result, why, ms(time.Now()), id)
	return err
}

// release gives a job back, due when it was, for an interrupted run.
func (s *Store) release(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET lease_until = 0 WHERE id = ?`, id)
	return err
}

// row is a job as a report shows it.
type row struct {
	job
	RetryAt   time.Time
	Result    string
	LastError string
}

// Jobs returns every job, oldest first.
func (s *Store) Jobs(ctx context.Context) ([]row, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, prompt, idem_key, remote_id, state, attempts, retry_at, result, last_error FROM jobs ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		var at int64
		if err := rows.Scan(&r.ID, &r.Prompt, &r.Key, &r.RemoteID, &r.State, &r.Attempts, &at, &r.Result, &r.LastError); err != nil {
			return nil, err
		}
		r.RetryAt = time.UnixMilli(at)
		out = append(out, r)
	}
	return out, rows.Err()
}
