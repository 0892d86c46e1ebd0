// Body hints: the waits some APIs put in a 429's JSON body rather than in a
// header, and the spent daily quotas that no short wait cures.

package heed

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sources of the waits read from a body, as Verdict.Source names them.
const (
	sourceRetryInfo  = "RetryInfo"   // Google's google.rpc.RetryInfo retryDelay (Gemini, Vertex AI, Cloud APIs)
	sourceRetryAfter = "retry_after" // Discord's JSON retry_after, in seconds
)

// bodyHint is what a 429's JSON body says of when to come back.
type bodyHint struct {
	wait   time.Duration
	source string // "": the body gives no wait
	perDay bool   // a Google QuotaFailure or ErrorInfo names a per-day quota
}

// googleDetail is one entry of a Google error's details: RetryInfo,
// QuotaFailure and ErrorInfo are the ones read.
type googleDetail struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
	Violations []struct {
		QuotaID string `json:"quotaId"`
	} `json:"violations"`
	Metadata map[string]any `json:"metadata"`
}

// readBodyHint reads the peeked start of a 429's JSON body: Google's
// {"error": {"details": [...]}} (alone, or as the one element of an array,
// as Vertex AI sends it) and Discord's {"retry_after": 1.5}. A body cut
// short is searched as text for the same members.
func readBodyHint(b []byte) bodyHint {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) > 0 && t[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(t, &list); err == nil {
			if len(list) == 0 {
				return bodyHint{}
			}
			t = list[0]
		}
	}
	var doc struct {
		Error      json.RawMessage `json:"error"`
		RetryAfter json.RawMessage `json:"retry_after"`
	}
	if err := json.Unmarshal(t, &doc); err != nil {
		var syn *json.SyntaxError
		if !errors.As(err, &syn) {
			return bodyHint{}
		}
		return bodyHintInText(b)
	}
	var h bodyHint
	if len(doc.RetryAfter) > 0 {
		if d, ok := parseFloatSeconds(string(doc.RetryAfter)); ok {
			h.wait, h.source = d, sourceRetryAfter
		}
	}
	var ge struct {
		Details []googleDetail `json:"details"`
	}
	if len(doc.Error) > 0 && doc.Error[0] == '{' && json.Unmarshal(doc.Error, &ge) == nil {
		for _, d := range ge.Details {
			switch {
			case strings.HasSuffix(d.Type, "google.rpc.RetryInfo"):
				if w, ok := parseProtoDuration(d.RetryDelay); ok && (h.source == "" || w > h.wait) {
					h.wait, h.source = w, sourceRetryInfo
				}
			case strings.HasSuffix(d.Type, "google.rpc.QuotaFailure"):
				for _, v := range d.Violations {
					h.perDay = h.perDay || strings.Contains(v.QuotaID, "PerDay")
				}
			case strings.HasSuffix(d.Type, "google.rpc.ErrorInfo"):
				if l, ok := d.Metadata["quota_limit"].(string); ok {
					h.perDay = h.perDay || strings.Contains(l, "PerDay")
				}
			}
		}
	}
	return h
}

// bodyHintInText is readBodyHint for a body cut short: the first whole
// "retry_after" number and "retryDelay" string found as text, and any
// "PerDay" in any "quotaId" or "quota_limit".
func bodyHintInText(b []byte) bodyHint {
	var h bodyHint
	if s, ok := memberInText(b, `"retry_after"`, false); ok {
		if d, ok := parseFloatSeconds(s); ok {
			h.wait, h.source = d, sourceRetryAfter
		}
	}
	if s, ok := memberInText(b, `"retryDelay"`, true); ok {
		if w, ok := parseProtoDuration(s); ok && (h.source == "" || w > h.wait) {
			h.wait, h.source = w, sourceRetryInfo
		}
	}
	for _, key := range []string{`"quotaId"`, `"quota_limit"`} {
		eachMemberInText(b, key, func(v string, quoted bool) bool {
			h.perDay = h.perDay || quoted && strings.Contains(v, "PerDay")
			return !h.perDay
		})
	}
	return h
}

// memberInText returns the first whole value that follows key and a colon
// in JSON text that may be cut short: a string (its text, unquoted) when
// str is set, else a number; values of the other kind are passed over.
func memberInText(b []byte, key string, str bool) (value string, ok bool) {
	eachMemberInText(b, key, func(v string, quoted bool) bool {
		if quoted == str {
			value, ok = v, true
			return false
		}
		return true
	})
	return value, ok
}

// eachMemberInText calls f with every whole string (unquoted, quoted set)
// or number value that follows key and a colon in JSON text that may be
// cut short, until f returns false. A value cut short, or of another kind,
// is passed over.
func eachMemberInText(b []byte, key string, f func(value string, quoted bool) bool) {
	for {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return
		}
		b = b[i+len(key):]
		rest := bytes.TrimLeft(b, " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		if len(rest) > 0 && rest[0] == '"' {
			j := bytes.IndexByte(rest[1:], '"')
			if j < 0 {
				return // cut short inside the string
			}
			if !f(string(rest[1:j+1]), true) {
				return
			}
			continue
		}
		j := 0
		for j < len(rest) && strings.IndexByte("0123456789.eE+-", rest[j]) >= 0 {
			j++
		}
		if j > 0 && j < len(rest) { // a number whole, not one the cut may have ended
			if !f(string(rest[:j]), false) {
				return
			}
		}
	}
}

// parseProtoDuration parses a google.protobuf.Duration in its JSON form,
// seconds with up to nine decimals and an "s": "26s", "45.837906927s".
// It reports false for anything else, a sign included, and for a wait that
// does not fit in a time.Duration.
func parseProtoDuration(s string) (time.Duration, bool) {
	if len(s) < 2 || len(s) > 32 || s[len(s)-1] != 's' {
		return 0, false
	}
	return parseFractionalSeconds(s[:len(s)-1])
}

// parseFloatSeconds parses a JSON number of seconds, such as Discord's
// retry_after (64.57), rounded up to the nanosecond. It reports false for
// anything else: a string, a negative, NaN, or a wait that does not fit in
// a time.Duration.
func parseFloatSeconds(s string) (time.Duration, bool) {
	if s == "" || len(s) > 32 || s[0] == '-' || s[0] == '+' || s[0] == '"' {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f >= float64(maxWholeSeconds) {
		return 0, false
	}
	return time.Duration(math.Ceil(f * float64(time.Second))), true
}
