// The CLI's log: one line per decision on stderr, with a live countdown
// on a terminal.

package main

import (
	"io"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// countdownTick is how often a countdown is redrawn.
const countdownTick = 100 * time.Millisecond

// cliLog is the log of "heed get" and "heed poll": one line per decision,
// every level, on stderr. When stderr is a terminal it also draws a live
// countdown to the next attempt, fed by observe (heed's events), and to
// jobpoll's next check, fed by nextCheck (the Poller's OnWait); off a
// terminal both are nil. Call stop before exiting: it stops the countdown
// and flushes the log.
type cliLog struct {
	*zap.Logger
	observe   func(heed.Event)
	nextCheck func(jobpoll.Status, time.Time)
	stop      func()
}

// decisionLogger returns the cliLog on stderr: console lines by default,
// JSON with jsonLog.
func decisionLogger(stderr io.Writer, jsonLog bool) cliLog {
	return newDecisionLogger(stderr, jsonLog, isTerminal(stderr))
}

func newDecisionLogger(stderr io.Writer, jsonLog, terminal bool) cliLog {
	cfg := zapcore.EncoderConfig{
		TimeKey:        "time",
		LevelKey:       "level",
		MessageKey:     "msg",
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    zapcore.LowercaseLevelEncoder,
		EncodeTime:     zapcore.RFC3339NanoTimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
	}
	var enc zapcore.Encoder
	if jsonLog {
		enc = zapcore.NewJSONEncoder(cfg)
	} else {
		cfg.EncodeLevel = zapcore.CapitalLevelEncoder
		cfg.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(cfg)
	}
	if !terminal {
		core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(stderr)), zapcore.DebugLevel)
		return cliLog{Logger: zap.New(core), stop: func() {}}
	}
	cd := newCountdown(stderr, countdownTick)
	core := countdownCore{Core: zapcore.NewCore(enc, cd, zapcore.DebugLevel), cd: cd}
	return cliLog{Logger: zap.New(core), observe: cd.observe, nextCheck: cd.pollWait, stop: cd.Stop}
}
