// Redaction: URLs and error texts without their secrets.

package rules

import (
	"net/url"
	"strconv"
	"strings"
)

// RedactError returns err's text without the secrets of the URLs it
// quotes: the URL of every *url.Error in its chain (net/http's errors
// quote the request URL, a redirect's Location included, with its query
// and username) and raw, the request's own URL, are replaced by their
// RedactURL form, as they are and as %q quotes them; then RedactText
// removes the userinfo, query and fragment of any other URL left in the
// text. It returns "" for a nil err. err itself is not changed, so that
// errors.Is and errors.As still reach everything in it.
func RedactError(err error, raw *url.URL) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	walkErrors(err, func(e error) {
		if ue, ok := e.(*url.Error); ok && ue.URL != "" {
			msg = replaceURL(msg, ue.URL)
		}
	})
	if raw != nil {
		msg = replaceURL(msg, raw.String())
	}
	return RedactText(msg)
}

// walkErrors calls f on err and on every error in its tree, as errors.As
// visits them.
func walkErrors(err error, f func(error)) {
	for err != nil {
		f(err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walkErrors(e, f)
			}
			return
		default:
			return
		}
	}
}

// replaceURL replaces rawURL in msg, as it is and as %q quotes it, with its
// redacted form: RedactURL's, or RedactText's when it does not parse.
func replaceURL(msg, rawURL string) string {
	var clean string
	if u, err := url.Parse(rawURL); err == nil {
		clean = RedactURL(u)
	} else {
		clean = RedactText(rawURL)
	}
	if clean == rawURL {
		return msg
	}
	msg = strings.ReplaceAll(msg, strconv.Quote(rawURL), strconv.Quote(clean))
	return strings.ReplaceAll(msg, rawURL, clean)
}

// RedactText returns s without the userinfo, query and fragment of the URLs
// it holds, for texts that may quote a URL heed did not build: an error
// from net/http naming a Location it could not parse, a job id that is a
// status URL. s is cut into words at spaces, quotes and angle brackets; in
// a word holding "//" (an absolute or scheme-relative URL), the userinfo
// before the host is dropped (and everything after "//" when a '?' or '#'
// comes before the userinfo's '@'); in a word whose '?' or '#' follows a '/', or
// whose '?' is followed by a '=', everything from that '?' or '#' is
// dropped, except a closing ':'. Other text is left as it is.
func RedactText(s string) string {
	if !strings.ContainsAny(s, "/?#@") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWordBreak)
		if i < 0 {
			i = len(s)
		}
		b.WriteString(redactWord(s[:i]))
		if i == len(s) {
			break
		}
		b.WriteByte(s[i]) // every break is one byte
		s = s[i+1:]
	}
	return b.String()
}

// isWordBreak reports whether r ends a word for RedactText.
func isWordBreak(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

// redactWord is RedactText for one word.
func redactWord(w string) string {
	if start := strings.Index(w, "//"); start >= 0 {
		// The authority runs from after "//" to the first '/'. A '?' or
		// '#' before its '@' may end the host or be part of a password
		// left unescaped: then nothing after "//" is shown.
		auth := w[start+2:]
		if end := strings.IndexByte(auth, '/'); end >= 0 {
			auth = auth[:end]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if strings.ContainsAny(auth[:at], "?#") {
				return w[:start+2]
			}
			w = w[:start+2] + w[start+2+at+1:]
		}
	}
	cut := -1
	if q := strings.IndexByte(w, '?'); q >= 0 && (strings.Contains(w[:q], "/") || strings.Contains(w[q:], "=")) {
		cut = q
	}
	if h := strings.IndexByte(w, '#'); h >= 0 && strings.Contains(w[:h], "/") && (cut < 0 || h < cut) {
		cut = h
	}
	if cut < 0 {
		return w
	}
	if strings.HasSuffix(w[cut:], ":") {
		return w[:cut] + ":"
	}
	return w[:cut]
}
