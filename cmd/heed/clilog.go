package main

import (
	"io"
	"time"

	"github.com/heed-go/heed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// countdownTick is how often a countdown is redrawn.
const countdownTick = 100 * time.Millisecond

// decisionLogger returns the logger of "heed get" and "heed poll": one line
// per decision, every level, on stderr; console lines by default, JSON
// with jsonLog. When stderr is a terminal it also draws a live countdown to
// the next attempt, fed by observe, which is then the heed.WithObserver of
// the Transport (nil off a terminal), and to jobpoll's next check. Call the
// returned stop before exiting: it stops the countdown and flushes the log.
func decisionLogger(stderr io.Writer, jsonLog bool) (log *zap.Logger, observe func(heed.Event), stop func()) {
	return newDecisionLogger(stderr, jsonLog, isTerminal(stderr))
}

func newDecisionLogger(stderr io.Writer, jsonLog, terminal bool) (*zap.Logger, func(heed.Event), func()) {
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
		return zap.New(core), nil, func() {}
	}
	cd := newCountdown(stderr, countdownTick)
	core := countdownCore{Core: zapcore.NewCore(enc, cd, zapcore.DebugLevel), cd: cd}
	return zap.New(core), cd.observe, cd.Stop
}
