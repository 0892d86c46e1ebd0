// Logging: each decision of a Transport as one structured log entry, to a
// zap logger, a log/slog logger, or both, with the same message, keys,
// levels and redaction.

package heed

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/heed-go/heed/internal/rules"
)

// decision is what one log line says, and one Event reports. Its kind,
// as EventKind.String spells it, is logged under the key "op"; attempts are
// given to observers only.
type decision struct {
	kind    EventKind
	route   string
	method  string
	url     *url.URL
	urlText string // url redacted, when already known
	attempt int
	status  int
	verdict Verdict
	wait    time.Duration
	source  string
	stop    string // why a retryable failure is delivered
	resent  int    // sends net/http made again of the attempt (resend.go)
	retryAt time.Time
	left    time.Duration
	err     error
}

// logDecision writes one line for d at level, to each logger that wants
// it. It never logs bodies, headers, URL userinfo or query strings.
func (t *Transport) logDecision(ctx context.Context, level zapcore.Level, d *decision) {
	op := d.kind.String()
	if t.slog != nil {
		if l := slogLevel(level); t.slog.Enabled(ctx, l) {
			var line slogLine
			d.line(&line, op)
			t.slog.LogAttrs(ctx, l, op, line...)
		}
	}
	if ce := t.log.Check(level, op); ce != nil {
		var line zapLine
		d.line(&line, op)
		ce.Write(line...)
	}
}

// lineWriter takes a log line's fields, one typed call each.
type lineWriter interface {
	text(key, value string)
	number(key string, value int)
	duration(key string, value time.Duration)
	instant(key string, value time.Time)
}

// line gives w the fields of d's log line, in order.
func (d *decision) line(w lineWriter, op string) {
	w.text("op", op)
	w.text("route", d.route)
	w.text("method", d.method)
	w.text("url", d.redacted())
	w.number("attempt", d.attempt)
	w.number("status", d.status)
	w.text("class", d.verdict.Class.String())
	w.text("reason", d.verdict.Reason)
	w.duration("wait", d.wait)
	if d.source != "" {
		w.text("source", d.source)
	}
	if d.stop != "" {
		w.text("stop", d.stop)
	}
	if !d.retryAt.IsZero() {
		w.instant("retry_at", d.retryAt)
	} else {
		w.text("retry_at", "") // no attempt is scheduled
	}
	w.duration("left", d.left)
	if d.err != nil {
		w.text("error", rules.RedactError(d.err, d.url))
	}
}

// zapLine is a log line's fields for zap.
type zapLine []zap.Field

func (l *zapLine) text(k, v string)                   { *l = append(*l, zap.String(k, v)) }
func (l *zapLine) number(k string, v int)             { *l = append(*l, zap.Int(k, v)) }
func (l *zapLine) duration(k string, v time.Duration) { *l = append(*l, zap.Duration(k, v)) }
func (l *zapLine) instant(k string, v time.Time)      { *l = append(*l, zap.Time(k, v)) }

// slogLine is a log line's fields for log/slog.
type slogLine []slog.Attr

func (l *slogLine) text(k, v string)                   { *l = append(*l, slog.String(k, v)) }
func (l *slogLine) number(k string, v int)             { *l = append(*l, slog.Int(k, v)) }
func (l *slogLine) duration(k string, v time.Duration) { *l = append(*l, slog.Duration(k, v)) }
func (l *slogLine) instant(k string, v time.Time)      { *l = append(*l, slog.Time(k, v)) }

// redacted returns the decision's URL, redacted.
func (d *decision) redacted() string {
	if d.urlText != "" {
		return d.urlText
	}
	return rules.RedactURL(d.url)
}

// slogLevel is slog's level for a zap level heed logs at: debug, info,
// warn; error for anything above.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}
