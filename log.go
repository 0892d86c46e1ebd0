// Logging: each decision of a Transport as one structured log entry.

package heed

import (
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
	retryAt time.Time
	left    time.Duration
	err     error
}

// logDecision writes one line for d at level, if the logger wants it. It
// never logs bodies, headers, URL userinfo or query strings.
func (t *Transport) logDecision(level zapcore.Level, d *decision) {
	op := d.kind.String()
	ce := t.log.Check(level, op)
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.String("op", op),
		zap.String("route", d.route),
		zap.String("method", d.method),
		zap.String("url", d.redacted()),
		zap.Int("attempt", d.attempt),
		zap.Int("status", d.status),
		zap.String("class", d.verdict.Class.String()),
		zap.String("reason", d.verdict.Reason),
		zap.Duration("wait", d.wait),
	}
	if d.source != "" {
		fields = append(fields, zap.String("source", d.source))
	}
	if d.stop != "" {
		fields = append(fields, zap.String("stop", d.stop))
	}
	if !d.retryAt.IsZero() {
		fields = append(fields, zap.Time("retry_at", d.retryAt))
	} else {
		fields = append(fields, zap.String("retry_at", "")) // no attempt is scheduled
	}
	fields = append(fields, zap.Duration("left", d.left))
	if d.err != nil {
		fields = append(fields, zap.String("error", rules.RedactError(d.err, d.url)))
	}
	ce.Write(fields...)
}

// redacted returns the decision's URL, redacted.
func (d *decision) redacted() string {
	if d.urlText != "" {
		return d.urlText
	}
	return rules.RedactURL(d.url)
}
