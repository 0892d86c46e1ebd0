// "heed get": one request through heed, as curl would send it.

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

// getUsage is the help text of "heed get".
const getUsage = `usage: heed get [-X METHOD] [-H 'Name: value']... [-d @file|string] [--deadline 30s] [--attempts N] [--json-log] URL

Sends one HTTP request through heed: it retries what is worth retrying,
waits exactly as long as the server asks (never less), and when that wait
cannot fit the deadline it stops at once and says when to try again.

The response body goes to stdout, as sent. One line per decision of heed
goes to stderr; while waiting, on a terminal, a live countdown to the next
attempt. heed never prints a URL's userinfo, query or fragment, nor the
request's headers. On a terminal, stderr shows the control characters of
what the server sent (its status text, an error body) escaped, as \x1b;
elsewhere (a pipe, a file) they are written as sent.

Exit codes:
  0    a 2xx response; its body is on stdout
  22   any other status, after retries (as curl -f); status and body on stderr
  75   deferred (EX_TEMPFAIL): stdout is one line "retry-at <RFC 3339 time>",
       the earliest time to try again; requeue the work for then
  1    any other error: network, deadline passed during an attempt, bad file
  2    bad flags or arguments
  130  interrupted

Flags (-flag and --flag are the same; flags may follow the URL):
`

// getMaxErrorBody bounds the body of a non-2xx response copied to stderr.
const getMaxErrorBody = 64 << 10

// runGet is "heed get": one request through a heed Transport.
func runGet(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	method := fs.String("X", "", "request `METHOD` (default GET, or POST with -d)")
	var headers headerFlags
	fs.Var(&headers, "H", "request header `'Name: value'`; repeat for more")
	data := fs.String("d", "", "request body: a `string`, @file, or @- for standard input;\n"+
		"Content-Type defaults to application/x-www-form-urlencoded, as with curl")
	deadline := fs.Duration("deadline", 30*time.Second, "the longest the whole command may take, waits and body included;\n"+
		"a wait that cannot fit defers (exit 75). 0: none, and single waits up to 60s")
	attempts := fs.Int("attempts", heed.DefaultMaxAttempts, "attempts including the first; 1 never retries")
	jsonLog := fs.Bool("json-log", false, "log decisions as JSON lines (default: console lines)")
	target, usageErr, code, done := parseCommand("get", getUsage, fs, args, stderr)
	if done {
		return code
	}
	if headers.bad != nil {
		return usageErr("%v", headers.bad)
	}
	if *attempts < 1 {
		return usageErr("--attempts must be at least 1")
	}
	if *deadline < 0 {
		return usageErr("--deadline must not be negative")
	}

	ctx, stop := interruptible()
	defer stop()
	if *deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *deadline)
		defer cancel()
	}

	body, size, err := requestBody(*data)
	if err != nil {
		fmt.Fprintf(stderr, "heed get: %v\n", err)
		return exitFailure
	}
	errw := terminalSafe(stderr)
	if c, ok := body.(io.Closer); ok {
		// heed closes the body it sends; this covers the paths that send
		// nothing.
		defer c.Close()
	}
	m := *method
	if m == "" {
		m = http.MethodGet
		if body != nil {
			m = http.MethodPost
		}
	}
	req, err := http.NewRequestWithContext(ctx, m, target, body)
	if err != nil {
		return usageErr("%s", rules.RedactError(err, nil))
	}
	if body != nil {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, vs := range headers.header {
		req.Header[k] = vs
	}
	if headers.host != "" {
		req.Host = headers.host
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}

	log := decisionLogger(stderr, *jsonLog)
	defer log.stop()
	policy := heed.Policy{Name: "get", MaxAttempts: *attempts}
	if *deadline > 0 {
		// The deadline alone decides whether a wait fits.
		policy.MaxWait = *deadline
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	tr := heed.New(base, heed.WithPolicy(policy), heed.WithLogger(log.Logger), heed.WithObserver(log.observe))
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Do(req)
	log.stop()
	if err != nil {
		return getError(stdout, errw, err, req.URL, *deadline)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		fmt.Fprintf(errw, "heed get: HTTP %s\n", resp.Status)
		// Read first, so that the body is escaped in one piece.
		if b, _ := io.ReadAll(io.LimitReader(resp.Body, getMaxErrorBody)); len(b) > 0 {
			errw.Write(append(b, '\n'))
		}
		return exitHTTP
	}
	if _, err := io.Copy(stdout, resp.Body); err != nil {
		fmt.Fprintf(errw, "heed get: reading the response body: %s\n", rules.RedactError(err, req.URL))
		if errors.Is(err, context.Canceled) {
			return exitInterrupted
		}
		return exitFailure
	}
	return exitOK
}

// getError reports a failed request to target and returns the exit code
// for it. The error's text is shown without the secrets of the URLs it
// quotes: target's, and a redirect's Location.
func getError(stdout, stderr io.Writer, err error, target *url.URL, deadline time.Duration) int {
	var de *heed.DeferredError
	if errors.As(err, &de) {
		why := "deferred: " + de.Reason
		if de.Status != 0 {
			why += fmt.Sprintf(" (HTTP %d)", de.Status)
		}
		why += fmt.Sprintf(", the server asks for %s", de.Wait.Round(time.Millisecond))
		printRetryAt(stdout, stderr, "get", de.RetryAt, why)
		return exitTempFail
	}
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "heed get: interrupted")
		return exitInterrupted
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(stderr, "heed get: the deadline of %s passed during an attempt: %s\n", deadline, rules.RedactError(err, target))
		return exitFailure
	}
	fmt.Fprintf(stderr, "heed get: %s\n", rules.RedactError(err, target))
	return exitFailure
}

// checkURL accepts an absolute http or https URL. Its error shows s
// without userinfo, query or fragment.
func checkURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", errors.New(rules.RedactError(err, nil))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want an http:// or https:// URL, got %q", rules.RedactText(s))
	}
	return s, nil
}

// requestBody opens the body given to -d: nil for none, the file of
// "@file" (which heed replays without copying), standard input for "@-",
// else the string itself. size is the body's length in bytes.
func requestBody(data string) (body io.Reader, size int64, err error) {
	switch {
	case data == "":
		return nil, 0, nil
	case data == "@-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, 0, fmt.Errorf("reading standard input: %w", err)
		}
		return bytes.NewReader(b), int64(len(b)), nil
	case strings.HasPrefix(data, "@"):
		f, err := os.Open(data[1:])
		if err != nil {
			return nil, 0, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		if !fi.Mode().IsRegular() {
			// A pipe or device cannot be replayed by position: read it.
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil {
				return nil, 0, err
			}
			return bytes.NewReader(b), int64(len(b)), nil
		}
		return f, fi.Size(), nil
	}
	return strings.NewReader(data), int64(len(data)), nil
}
