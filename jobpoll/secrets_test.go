package jobpoll_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
)

// Secrets a status URL and its redirects may carry. None may reach the
// text of an error jobpoll returns, nor a log line.
const (
	pollUser     = "alice-USER0011"
	pollPassword = "PASSWORD0004"
	pollAmzSig   = "AMZSIG0005"
	pollSig      = "SIGVALUE0006"
	pollQueryKey = "QUERYKEY0007"
	pollFragment = "FRAGMENT0008"
	locUser      = "bob-LOCUSER0013"
	locPassword  = "LOCPASSWORD0014"
	locSig       = "LOCSIG0012"
)

var pollSecrets = []string{pollUser, pollPassword, pollAmzSig, pollSig, pollQueryKey, pollFragment, locUser, locPassword, locSig}

// secretStatusURL puts every secret of the status URL around base
// (http://host:port) and path.
func secretStatusURL(base, path string) string {
	u, err := url.Parse(base + path)
	if err != nil {
		panic(err)
	}
	u.User = url.UserPassword(pollUser, pollPassword)
	u.RawQuery = "X-Amz-Signature=" + pollAmzSig + "&sig=" + pollSig + "&api_key=" + pollQueryKey
	u.Fragment = pollFragment
	return u.String()
}

// closedPort returns http://127.0.0.1:PORT where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

// TestErrorsHoldNoSecrets polls a status URL full of secrets (userinfo,
// query, fragment), with the same URL as the job's id, down every error
// path Poll has, through a real heed Transport to loopback servers, some
// of which redirect to a signed Location. No secret may be in the error's
// text or in a log line of jobpoll or of heed, and the error's parts stay
// reachable with errors.As.
func TestErrorsHoldNoSecrets(t *testing.T) {
	refused := closedPort(t)
	signedLoc := func(base string) string {
		return strings.Replace(base, "http://", "http://"+locUser+":"+locPassword+"@", 1) + "/dl?X-Amz-Signature=" + locSig
	}
	redirect := func(loc string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusFound)
		}
	}
	json := func(status int, body string, kv ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(kv); i += 2 {
				w.Header().Set(kv[i], kv[i+1])
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}
	}
	// after serves /dl with then, and redirects everything else to a
	// signed /dl on the same server.
	after := func(then http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/dl" {
				then(w, r)
				return
			}
			redirect("/dl?X-Amz-Signature="+locSig)(w, r)
		}
	}
	var (
		urlErr  *url.Error
		defErr  *heed.DeferredError
		httpErr *jobpoll.HTTPError
		bigErr  *jobpoll.BodyTooLargeError
		timeErr *jobpoll.TimeoutError
		unkErr  *jobpoll.UnknownStateError
		fldErr  *jobpoll.FieldError
	)
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc // nil: the status URL is refused
		deadline time.Duration
		timeout  time.Duration // of the client
		want     any           // a pointer to the error type errors.As must find
	}{
		{name: "refused", want: &urlErr},
		{name: "connection reset", handler: func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		}, want: &urlErr},
		{name: "redirect to a refused signed Location", handler: redirect(signedLoc(refused)), want: &urlErr},
		{name: "redirect loop through signed Locations", handler: redirect("/loop?X-Amz-Signature=" + locSig), want: &urlErr},
		{name: "unparseable signed Location", handler: redirect("/dl%zz?X-Amz-Signature=" + locSig), want: &urlErr},
		{name: "unparseable signed absolute Location", handler: redirect("http://" + locUser + ":" + locPassword + "@127.0.0.1:1/%zz?sig=" + locSig), want: &urlErr},
		{name: "client timeout after a redirect", handler: after(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}), timeout: 200 * time.Millisecond, want: &urlErr},
		{name: "deferred after a redirect", handler: after(json(429, "", "Retry-After", "600")), want: &defErr},
		{name: "404 after a redirect", handler: after(json(404, `{"error":"no such job"}`)), want: &httpErr},
		{name: "body too large after a redirect", handler: after(json(200, `{"status":"running","pad":"`+strings.Repeat("x", 2<<20)+`"}`)), want: &bigErr},
		{name: "no state after a redirect", handler: after(json(200, `{"state":"running"}`)), want: &fldErr},
		{name: "unknown state after a redirect", handler: after(json(200, `{"status":"exploded"}`)), want: &unkErr},
		{name: "deadline after a redirect", handler: after(json(200, `{"status":"running"}`, "Retry-After", "600")), deadline: 5 * time.Second, want: &timeErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := refused
			if tc.handler != nil {
				srv := httptest.NewServer(tc.handler)
				t.Cleanup(srv.Close)
				base = srv.URL
			}
			target := secretStatusURL(base, "/v1/jobs/42")
			core, logs := observer.New(zapcore.DebugLevel)
			log := zap.New(core)
			inner := &http.Transport{}
			t.Cleanup(inner.CloseIdleConnections)
			tr := heed.New(inner, heed.WithLogger(log), heed.WithPolicy(heed.Policy{
				MaxAttempts: 2, MinWait: time.Millisecond, Backoff: heed.Constant(time.Millisecond), MaxElapsed: 5 * time.Second,
			}))
			p := &jobpoll.Poller{Terminal: terminal, Running: []string{"running"}, Deadline: tc.deadline, Logger: log}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := p.Poll(ctx, target, &jobpoll.HTTPChecker{
				URL: target, Field: "status", Client: &http.Client{Transport: tr, Timeout: tc.timeout},
			})
			require.Error(t, err)
			require.ErrorAs(t, err, tc.want, "the error's parts stay reachable: %v", err)
			texts := []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)}
			for _, e := range logs.All() {
				texts = append(texts, e.Message)
				for k, v := range e.ContextMap() {
					texts = append(texts, k+"="+fmt.Sprint(v))
				}
			}
			for _, s := range texts {
				for _, secret := range pollSecrets {
					assert.NotContains(t, s, secret)
				}
			}
			assert.Contains(t, err.Error(), strings.TrimPrefix(base, "http://")+"/v1/jobs/42", "the job is still named")
			t.Logf("%v", err)
		})
	}
	// Only the text is redacted: the *url.Error found keeps its URL.
	require.NotNil(t, urlErr)
	assert.Contains(t, urlErr.URL, "?")
}
