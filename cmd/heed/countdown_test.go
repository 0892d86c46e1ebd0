package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// syncBuffer is a bytes.Buffer safe for the countdown's goroutine and the
// test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCountdown asserts that a retry heed reports on a terminal draws a
// countdown that ends, cleared, when the time comes.
func TestCountdown(t *testing.T) {
	var out syncBuffer
	l := newDecisionLogger(&out, false, true)
	log, observe := l.Logger, l.observe
	defer l.stop()
	require.NotNil(t, observe)
	at := time.Now().Add(350 * time.Millisecond)
	// As heed does: the log line first, then the event.
	log.Info("retry", zap.String("op", "retry"), zap.Duration("wait", 350*time.Millisecond), zap.Time("retry_at", at))
	observe(heed.Event{Kind: heed.EventRetry, Attempt: 1, Wait: 350 * time.Millisecond, RetryAt: at})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "next attempt in 0.") }, time.Second, 10*time.Millisecond)
	time.Sleep(time.Until(at) + 3*countdownTick)
	s := out.String()
	assert.True(t, strings.HasSuffix(s, clearLine), "the countdown line is cleared at the end: %q", s)
	assert.Equal(t, 1, strings.Count(s, "\n"), "only the log line ends a line")

	// A log line clears the countdown before it is written, and a poll
	// wait counts down to the next check: the log line first, then the
	// Poller's OnWait, as jobpoll does.
	next := time.Now().Add(time.Minute)
	log.Info("poll wait", zap.String("op", "poll wait"), zap.Time("next_check", next))
	time.Sleep(3 * countdownTick)
	assert.NotContains(t, out.String(), "next check", "a poll wait's log line alone starts no countdown")
	require.NotNil(t, l.nextCheck)
	l.nextCheck(jobpoll.Status{State: "running"}, time.Now().Add(2*time.Minute)) // not the log's time: the call's
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "next check in 2m0s") }, time.Second, 10*time.Millisecond)
	log.Info("poll done", zap.String("op", "poll done"))
	s = out.String()
	assert.True(t, strings.HasSuffix(s, "\n"), "the countdown stopped when the next line came: %q", s)
	assert.Contains(t, s, clearLine+"")
}

// TestCountdownFromEvents asserts that heed's waits are counted down from
// its events, not its log: a gate wait counts down to the next attempt, a
// retry log line without an event draws nothing, and a decision that
// schedules no attempt ends the countdown.
func TestCountdownFromEvents(t *testing.T) {
	var out syncBuffer
	l := newDecisionLogger(&out, false, true)
	log, observe := l.Logger, l.observe
	defer l.stop()
	log.Info("retry", zap.String("op", "retry"), zap.Time("retry_at", time.Now().Add(time.Minute)))
	time.Sleep(3 * countdownTick)
	assert.NotContains(t, out.String(), "next attempt", "a log line alone starts no countdown")

	observe(heed.Event{Kind: heed.EventGateWait, Attempt: 1, RetryAt: time.Now().Add(time.Minute)})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "next attempt in 1m0s") }, time.Second, 10*time.Millisecond)
	observe(heed.Event{Kind: heed.EventAttempt, Attempt: 1, Status: 200})
	s := out.String()
	assert.True(t, strings.HasSuffix(s, clearLine), "the countdown is cleared when the attempt is answered: %q", s)
	time.Sleep(3 * countdownTick)
	assert.Equal(t, s, out.String(), "and not drawn again")
}

// TestNoCountdownOffTerminal asserts that off a terminal only log lines
// are written, and that there is no observer to give heed or jobpoll.
func TestNoCountdownOffTerminal(t *testing.T) {
	var out syncBuffer
	l := newDecisionLogger(&out, true, false)
	assert.Nil(t, l.observe)
	assert.Nil(t, l.nextCheck)
	l.Info("retry", zap.String("op", "retry"), zap.Time("retry_at", time.Now().Add(time.Second)))
	l.stop()
	assert.NotContains(t, out.String(), "next attempt")
	assert.NotContains(t, out.String(), "\r")
	assert.True(t, strings.HasPrefix(out.String(), "{"), "JSON: %q", out.String())
}

func TestRemaining(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1:                       "0.1s",
		100 * time.Millisecond:  "0.1s",
		1450 * time.Millisecond: "1.5s",
		59 * time.Second:        "59.0s",
		time.Minute:             "1m0s",
		time.Minute + 1:         "1m1s",
		10 * time.Minute:        "10m0s",
	} {
		assert.Equal(t, want, remaining(d), "%s", d)
	}
}

// TestTerminalLogEscapesControls asserts that a log line on a terminal
// shows the control characters its fields may quote from a server
// escaped: zap itself passes DEL and C1 controls through.
func TestTerminalLogEscapesControls(t *testing.T) {
	var out syncBuffer
	l := newDecisionLogger(&out, false, true)
	l.Info("give up", zap.String("op", "give up"), zap.String("error", "malformed header: \u009b2J\x7f"))
	l.stop()
	assert.Contains(t, out.String(), `malformed header: \u009b2J\x7f`)
	assert.NotContains(t, out.String(), "\u009b")
	assert.NotContains(t, out.String(), "\x7f")
	assert.True(t, strings.HasSuffix(out.String(), "\n"), "the line still ends")
}
