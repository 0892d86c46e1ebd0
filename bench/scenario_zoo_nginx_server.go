package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The nginx the zoo starts: a child process of the bench, in the
// foreground (daemon off) as a single process (master_process off), with a
// configuration of its own in a temporary folder that also holds its pid
// file, logs, temporary paths and the one file it serves, listening on a
// free port of 127.0.0.1. Its access log, one status per line, is the
// server's own count of what it answered.

// nginxBins are the programs looked for, in order: nginx on the PATH, then
// where Debian's package puts it (/usr/sbin is not on every PATH). Tests
// change it to see the scenario without nginx.
var nginxBins = []string{"nginx", "/usr/sbin/nginx"}

// nginxMissing is why a zoo-nginx cell is empty when no nginx is found.
const nginxMissing = "nginx not installed (apt-get install nginx)"

// conf is nginx.conf for l, serving dir/html on 127.0.0.1:port. The file
// is served from the content phase, after limit_req (a "return 200" would
// answer in the rewrite phase, before limit_req runs). Its readiness
// location answers 204 with the header nginxReady set to dir, unlimited
// and unlogged: it tells this nginx from another server that took its
// port.
func (l nginxLimit) conf(dir string, port int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events {
    worker_connections 1024;
}
http {
    default_type text/plain;
    log_format zoo '$status';
    access_log %[1]s/access.log zoo;
    client_body_temp_path %[1]s/tmp/body;
    proxy_temp_path %[1]s/tmp/proxy;
    fastcgi_temp_path %[1]s/tmp/fastcgi;
    uwsgi_temp_path %[1]s/tmp/uwsgi;
    scgi_temp_path %[1]s/tmp/scgi;
    limit_req_zone $binary_remote_addr zone=zoo:1m rate=%[3]dr/s;
    server {
        listen 127.0.0.1:%[2]d;
        root %[1]s/html;
        location = %[5]s {
            access_log off;
            add_header %[6]s %[1]s always;
            return 204;
        }
        location / {
            limit_req zone=zoo burst=%[4]d nodelay;
`, dir, port, l.rate, l.burst, nginxReadyPath, nginxReady)
	if l.hint {
		b.WriteString(`            limit_req_status 429;
            error_page 429 = @throttled;
        }
        location @throttled {
            add_header Retry-After 1 always;
            return 429;
        }
`)
	} else {
		b.WriteString("        }\n")
	}
	b.WriteString("    }\n}\n")
	return b.String()
}

// nginxReadyPath is the location that tells a zoo nginx is up, and
// nginxReady the header it answers with: its folder.
const (
	nginxReadyPath = "/heed-bench-ready"
	nginxReady     = "X-Heed-Bench-Nginx"
)

// nginxServer is a running nginx.
type nginxServer struct {
	dir, addr string
	limit     nginxLimit
	t0        time.Time
	cmd       *exec.Cmd
	out       strings.Builder // what it printed; read only once it exited
	exited    chan struct{}
	once      sync.Once
	counts    zooCounts
}

// findNginx is the first of nginxBins found.
func findNginx() (string, error) {
	for _, b := range nginxBins {
		if p, err := exec.LookPath(b); err == nil {
			return p, nil
		}
	}
	return "", skipError(nginxMissing)
}

// startNginx starts nginx with limit l and waits until it accepts
// connections. When the port was taken between choosing it and nginx
// binding it, it tries again, twice.
func startNginx(l nginxLimit) (*nginxServer, error) {
	bin, err := findNginx()
	if err != nil {
		return nil, err
	}
	for range 3 {
		var s *nginxServer
		if s, err = startNginxOnce(bin, l); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func startNginxOnce(bin string, l nginxLimit) (_ *nginxServer, err error) {
	dir, err := os.MkdirTemp("", "heed-bench-nginx-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	for _, d := range []string{"html/v1", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "html/v1/items"), []byte("ok\n"), 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(l.conf(dir, port)), 0o644); err != nil {
		return nil, err
	}
	s := &nginxServer{dir: dir, addr: "127.0.0.1:" + strconv.Itoa(port), limit: l, exited: make(chan struct{})}
	// -e: the error log from the very start, before the configuration is
	// read (nginx's default is a path under /var/log).
	s.cmd = exec.Command(bin, "-p", dir+"/", "-c", conf, "-e", filepath.Join(dir, "error.log"))
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.t0 = time.Now()
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// This nginx, not another server that took the port after it was
		// chosen (nginx then exits, unable to bind it, and is started
		// again on another).
		err := s.ready()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, errors.New("nginx exited: " + s.lastWords())
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("nginx on %s did not answer: %w: %s", s.addr, err, s.lastWords())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ready asks s's readiness location whether s answers on its address.
func (s *nginxServer) ready() error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + s.addr + nginxReadyPath)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get(nginxReady) != s.dir {
		return fmt.Errorf("another server answers on %s (%s)", s.addr, resp.Status)
	}
	return nil
}

func (s *nginxServer) url() string     { return "http://" + s.addr + "/v1/items" }
func (s *nginxServer) born() time.Time { return s.t0 }

// stop has nginx shut down (SIGINT: its fast shutdown; killed if it is
// still running 5 s later), counts its access log and removes its folder.
func (s *nginxServer) stop() zooCounts {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			s.kill()
		}
		s.counts = s.countLog()
		os.RemoveAll(s.dir)
	})
	return s.counts
}

// kill kills nginx at once and waits for it to exit.
func (s *nginxServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// countLog reads the access log: one line per request, its status.
func (s *nginxServer) countLog() zooCounts {
	var n zooCounts
	f, err := os.Open(filepath.Join(s.dir, "access.log"))
	if err != nil {
		return n
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	refused := strconv.Itoa(s.limit.status())
	for sc.Scan() {
		n.received++
		switch strings.TrimSpace(sc.Text()) {
		case "200":
			n.served++
		case refused:
			n.refused++
		}
	}
	return n
}

// lastWords is the last line nginx printed or logged as an error; read it
// only once nginx has exited.
func (s *nginxServer) lastWords() string {
	if b, err := os.ReadFile(filepath.Join(s.dir, "error.log")); err == nil && strings.TrimSpace(string(b)) != "" {
		return lastLine(string(b))
	}
	if strings.TrimSpace(s.out.String()) == "" {
		return "no output"
	}
	return lastLine(s.out.String())
}
