package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fleetRedisBin is the program the fleet scenario starts for its shared
// gate, looked up on the PATH; tests change it to see the scenario without.
var fleetRedisBin = "redis-server"

// redisMissing is the fleet's cell when fleetRedisBin is not on the PATH.
const redisMissing = "skipped: redis-server not on PATH (apt-get install redis-server)"

// redisServer is a redis-server the fleet scenario started on a free
// loopback port, with nothing saved to disk.
type redisServer struct {
	addr   string
	cmd    *exec.Cmd
	out    strings.Builder // what it printed; read only once it exited
	exited chan struct{}
	once   sync.Once
}

// startRedis starts bin and waits until it answers PING. When the port
// was taken between choosing it and redis binding it, it tries again,
// twice.
func startRedis(bin string) (*redisServer, error) {
	var err error
	for range 3 {
		var s *redisServer
		if s, err = startRedisOnce(bin); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func startRedisOnce(bin string) (*redisServer, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	if err := l.Close(); err != nil {
		return nil, err
	}
	s := &redisServer{addr: "127.0.0.1:" + port, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, errors.New("redis-server exited: " + lastLine(s.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer: %w: %s", s.addr, err, lastLine(s.out.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop kills the server, at once, and waits for it to exit.
func (s *redisServer) stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
}

// lastLine is the last non-empty line of what a program printed.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
