// The countdown: the time left before heed's next attempt or jobpoll's
// next check, drawn on one line of a terminal.

package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
	"go.uber.org/zap/zapcore"
)

// countdown shows, on one line of a terminal, the time left before heed's
// next attempt or check, redrawn until then. It is also the io.Writer of
// the decision log on that terminal: each log line first clears the
// countdown, so that the two never mix.
type countdown struct {
	w    io.Writer
	tick time.Duration

	mu    sync.Mutex
	shown bool          // a countdown line is on the terminal
	stop  chan struct{} // closed to end the running countdown
	done  chan struct{} // closed when it has ended
}

// newCountdown returns a countdown drawn on w every tick.
func newCountdown(w io.Writer, tick time.Duration) *countdown {
	return &countdown{w: w, tick: tick}
}

// isTerminal reports whether w is a terminal: a character device, and
// TERM is not "dumb".
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// clearLine erases the countdown line: carriage return, erase to the end.
const clearLine = "\r\x1b[K"

// Write clears the countdown line, if shown, and writes p with its control
// characters escaped (escapeControls): a log line may quote what a server
// sent.
func (c *countdown) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearLocked()
	return escaper{c.w}.Write(p)
}

// Sync is a no-op, for zapcore.WriteSyncer.
func (c *countdown) Sync() error { return nil }

func (c *countdown) clearLocked() {
	if c.shown {
		io.WriteString(c.w, clearLine)
		c.shown = false
	}
}

// Start shows "label in N" until at, replacing any countdown running.
func (c *countdown) Start(label string, at time.Time) {
	c.Stop()
	stop, done := make(chan struct{}), make(chan struct{})
	c.mu.Lock()
	c.stop, c.done = stop, done
	c.mu.Unlock()
	go func() {
		defer close(done)
		ticker := time.NewTicker(c.tick)
		defer ticker.Stop()
		for {
			left := time.Until(at)
			c.mu.Lock()
			if left <= 0 {
				c.clearLocked()
				c.mu.Unlock()
				return
			}
			fmt.Fprintf(c.w, "%s%s in %s (at %s)", clearLine, label, remaining(left), at.Local().Format("15:04:05"))
			c.shown = true
			c.mu.Unlock()
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
		}
	}()
}

// Stop ends the running countdown, if any, and clears its line.
func (c *countdown) Stop() {
	c.mu.Lock()
	stop, done := c.stop, c.done
	c.stop, c.done = nil, nil
	c.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	c.mu.Lock()
	c.clearLocked()
	c.mu.Unlock()
}

// remaining formats a time left: tenths of a second under a minute, whole
// seconds beyond; rounded up, so that it never reads 0 before the end.
func remaining(d time.Duration) string {
	const tenth = 100 * time.Millisecond
	if tenths := (d + tenth - 1) / tenth; tenths < 600 {
		return fmt.Sprintf("%d.%ds", tenths/10, tenths%10)
	}
	return ((d + time.Second - 1) / time.Second * time.Second).String()
}

// observe is the heed.WithObserver of a Transport whose waits this
// countdown shows: a retry or a gate wait starts a countdown to the next
// attempt (Event.RetryAt); any other decision ends the countdown running.
// heed logs a decision before it reports it, so the countdown started here
// outlives the log line of the same decision.
func (c *countdown) observe(e heed.Event) {
	switch e.Kind {
	case heed.EventRetry, heed.EventGateWait:
		if !e.RetryAt.IsZero() {
			c.Start("next attempt", e.RetryAt)
			return
		}
	}
	c.Stop()
}

// pollWait is the jobpoll.Poller's OnWait of a poll whose waits this
// countdown shows: it counts down to the next check. jobpoll logs its wait
// before it calls OnWait, so the countdown outlives that log line.
func (c *countdown) pollWait(_ jobpoll.Status, next time.Time) {
	c.Start("next check", next)
}

// countdownCore is a zapcore.Core that passes every entry on to the log's
// own core, ending the countdown running before each, so that no line is
// drawn over it. What to count down to comes from events (observe,
// pollWait), never from the log.
type countdownCore struct {
	zapcore.Core
	cd *countdown
}

// With returns a countdownCore around the inner core's With.
func (c countdownCore) With(fields []zapcore.Field) zapcore.Core {
	return countdownCore{Core: c.Core.With(fields), cd: c.cd}
}

// Check adds this core, rather than the inner one, for enabled entries.
func (c countdownCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write ends the countdown running, then writes the entry.
func (c countdownCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	c.cd.Stop()
	return c.Core.Write(e, fields)
}
