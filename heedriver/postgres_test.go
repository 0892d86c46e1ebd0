package heedriver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errNoPostgres says the PostgreSQL binaries are not installed.
var errNoPostgres = errors.New("PostgreSQL binaries (initdb, pg_ctl, postgres) not found")

// pgServer is a PostgreSQL server the tests started, on 127.0.0.1.
type pgServer struct {
	bin    string // the directory of initdb, pg_ctl and postgres
	base   string // holds the data directory, the socket and the log
	data   string
	port   int
	cred   *syscall.Credential // the postgres user's, when the tests run as root
	cmd    *exec.Cmd
	exited chan struct{}
}

// shared is the server all tests share, started by the first that needs it.
var shared struct {
	once sync.Once
	srv  *pgServer
	err  error
	dbs  atomic.Int64
}

// postgresURL returns the URL of a new, empty database on the shared
// server, starting it first if need be. Without PostgreSQL binaries it
// skips t, or fails it when HEED_REQUIRE_POSTGRES=1.
func postgresURL(t *testing.T) string {
	t.Helper()
	shared.once.Do(func() { shared.srv, shared.err = startPostgres() })
	if shared.err != nil {
		if errors.Is(shared.err, errNoPostgres) && os.Getenv("HEED_REQUIRE_POSTGRES") != "1" {
			t.Skip(shared.err.Error() + "; set HEED_REQUIRE_POSTGRES=1 to fail instead")
		}
		t.Fatal(shared.err)
	}
	name := fmt.Sprintf("heedriver_%d", shared.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, shared.srv.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return shared.srv.url(name)
}

// stopPostgres stops the shared server, if one was started.
func stopPostgres() {
	if shared.srv != nil {
		shared.srv.stop()
	}
}

// url returns the URL of database db on s.
func (s *pgServer) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// findPostgresBin returns a directory holding initdb, pg_ctl and postgres:
// where those in PATH lead, or Debian's /usr/lib/postgresql/*/bin.
func findPostgresBin() (string, error) {
	var dirs []string
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if p, err := exec.LookPath(name); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	globbed, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	dirs = append(dirs, globbed...)
	for _, dir := range dirs {
		ok := true
		for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				ok = false
			}
		}
		if ok {
			return dir, nil
		}
	}
	return "", errNoPostgres
}

// startPostgres makes a cluster in a new temporary directory and starts a
// server on it at a free port of 127.0.0.1, with fsync off; as root, both
// run as the postgres user, since initdb refuses root.
func startPostgres() (*pgServer, error) {
	bin, err := findPostgresBin()
	if err != nil {
		return nil, err
	}
	s := &pgServer{bin: bin, exited: make(chan struct{})}
	if s.base, err = os.MkdirTemp("", "heedriver-pg-"); err != nil {
		return nil, err
	}
	s.data = filepath.Join(s.base, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, s.fail(fmt.Errorf("running as root, and no postgres user to run PostgreSQL as: %w", err))
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(s.base, int(uid), int(gid)); err != nil {
			return nil, s.fail(err)
		}
	}
	initdb := s.command(filepath.Join(bin, "initdb"), "-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, s.fail(fmt.Errorf("initdb: %w\n%s", err, out))
	}
	if s.port, err = freePort(); err != nil {
		return nil, s.fail(err)
	}
	logFile, err := os.Create(filepath.Join(s.base, "postgres.log"))
	if err != nil {
		return nil, s.fail(err)
	}
	defer logFile.Close()
	s.cmd = s.command(filepath.Join(bin, "postgres"), "-D", s.data, "-k", s.base,
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-F", "-c", "max_connections=200")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Its own process group, and SIGQUIT (immediate shutdown) should the
	// test binary die without stopping it, killed by a timeout say.
	s.cmd.SysProcAttr.Setpgid = true
	s.cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := s.cmd.Start(); err != nil {
		return nil, s.fail(err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(30 * time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.base, "postgres.log"))
		s.stop()
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return s, nil
}

// command returns the command name args, run in s.base as the postgres
// user when the tests run as root: initdb refuses root, and so does
// postgres. The credential is set on the process itself, as runuser would,
// so that the server is the test's own child and Pdeathsig reaches it.
func (s *pgServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// waitReady waits until the server accepts a connection, or it exits.
func (s *pgServer) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.url("postgres"))
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited before accepting connections: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not accepting connections after %s: %w", limit, err)
		}
	}
}

// stop stops the server (a fast shutdown, then a kill of its process group
// if it lingers) and removes its directory.
func (s *pgServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		stop := s.command(filepath.Join(s.bin, "pg_ctl"), "stop", "-D", s.data, "-m", "fast", "-w", "-t", "20")
		_ = stop.Run()
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	}
	_ = os.RemoveAll(s.base)
}

// fail removes s's directory and returns err.
func (s *pgServer) fail(err error) error {
	_ = os.RemoveAll(s.base)
	return err
}

// freePort returns a TCP port of 127.0.0.1 free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newPostgresPool returns a pool on a new database, closed when t ends.
func newPostgresPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
