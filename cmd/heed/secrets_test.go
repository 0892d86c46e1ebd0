package main

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Secrets a URL given to heed, and the Locations its server redirects to,
// may carry. None may appear in anything heed get or heed poll prints.
const (
	cliUser     = "alice-USER0011"
	cliPassword = "PASSWORD0004"
	cliAmzSig   = "AMZSIG0005"
	cliSig      = "SIGVALUE0006"
	cliQueryKey = "QUERYKEY0007"
	cliFragment = "FRAGMENT0008"
	cliLocUser  = "bob-LOCUSER0013"
	cliLocPass  = "LOCPASSWORD0014"
	cliLocSig   = "LOCSIG0012"
	cliHeader   = "sk-live-HEADER0015"
)

var cliSecrets = []string{cliUser, cliPassword, cliAmzSig, cliSig, cliQueryKey, cliFragment, cliLocUser, cliLocPass, cliLocSig, cliHeader}

// secretURL is base (http://host:port) with path, and every secret in its
// userinfo, query and fragment.
func secretURL(t *testing.T, base, path string) string {
	t.Helper()
	u, err := url.Parse(base + path)
	require.NoError(t, err)
	u.User = url.UserPassword(cliUser, cliPassword)
	u.RawQuery = "X-Amz-Signature=" + cliAmzSig + "&sig=" + cliSig + "&api_key=" + cliQueryKey
	u.Fragment = cliFragment
	return u.String()
}

// TestCLIPrintsNoSecrets runs the built binary, heed get and heed poll,
// with URLs whose userinfo, query and fragment hold secrets, against
// servers that fail, redirect to signed Locations, throttle and defer,
// with console and JSON logs: no secret may appear on stdout or stderr,
// while the URL is still named without them.
func TestCLIPrintsNoSecrets(t *testing.T) {
	bin := buildHeed(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + l.Addr().String()
	require.NoError(t, l.Close())

	signed := "/dl?X-Amz-Signature=" + cliLocSig
	redirect := func(loc string) http.HandlerFunc { return reply(http.StatusFound, "", "Location", loc) }
	// via redirects every request but /dl to the signed /dl, which h
	// serves.
	via := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/dl" {
				h(w, r)
				return
			}
			redirect(signed)(w, r)
		}
	}
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	reset := func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	}
	toRefused := strings.Replace(refused, "http://", "http://"+cliLocUser+":"+cliLocPass+"@", 1) + signed
	pollFlags := []string{"poll", "--terminal", "succeeded,failed", "--running", "running", "--interval", "10ms", "--max-interval", "20ms"}

	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc // nil: the URL's port is refused
		args    []string         // before the URL
		code    int
	}{
		{"get: refused", nil, []string{"get", "--attempts", "1"}, exitFailure},
		{"get: refused, retried, JSON log", nil, []string{"get", "--attempts", "2", "--json-log"}, exitFailure},
		{"get: connection reset", reset, []string{"get", "--attempts", "2"}, exitFailure},
		{"get: redirect to a refused signed Location", redirect(toRefused), []string{"get", "--attempts", "1"}, exitFailure},
		{"get: redirect loop through signed Locations", redirect("/loop?X-Amz-Signature=" + cliLocSig), []string{"get"}, exitFailure},
		{"get: unparseable signed Location", redirect("/dl%zz?X-Amz-Signature=" + cliLocSig), []string{"get", "--attempts", "1"}, exitFailure},
		{"get: unparseable absolute Location with userinfo", redirect("http://" + cliLocUser + ":" + cliLocPass + "@127.0.0.1:1/%zz?sig=" + cliLocSig), []string{"get", "--attempts", "1"}, exitFailure},
		{"get: deadline passes during an attempt, after a redirect", via(slow), []string{"get", "--deadline", "500ms"}, exitFailure},
		{"get: 404 after a redirect", via(reply(404, `{"error":"no such object"}`)), []string{"get"}, exitHTTP},
		{"get: 429 then 200 after a redirect", via(func() http.HandlerFunc {
			n := 0
			return func(w http.ResponseWriter, r *http.Request) {
				if n++; n == 1 {
					reply(429, "", "Retry-After", "1")(w, r)
					return
				}
				reply(200, "ok")(w, r)
			}
		}()), []string{"get", "--json-log"}, exitOK},
		{"get: deferred after a redirect", via(reply(429, "", "Retry-After", "600")), []string{"get", "--deadline", "5s"}, exitTempFail},
		{"get: a header with a secret and no colon", nil, []string{"get", "-H", "Authorization Bearer " + cliHeader}, exitUsage},
		{"get: not http", nil, []string{"get"}, exitUsage},

		{"poll: refused, deferred", nil, append(pollFlags, "--check-deadline", "1s"), exitTempFail},
		{"poll: redirect loop through signed Locations", redirect("/loop?X-Amz-Signature=" + cliLocSig), pollFlags, exitUnavailable},
		{"poll: unparseable signed Location", redirect("/dl%zz?X-Amz-Signature=" + cliLocSig), pollFlags, exitUnavailable},
		{"poll: check timeout after a redirect", via(slow), append(pollFlags, "--check-deadline", "300ms"), exitUnavailable},
		{"poll: 404 after a redirect", via(reply(404, `{"error":"no such job"}`)), pollFlags, exitHTTP},
		{"poll: unknown state after a redirect, JSON log", via(reply(200, `{"status":"exploded"}`)), append(pollFlags, "--json-log"), exitDataErr},
		{"poll: no state after a redirect", via(reply(200, `{"state":"running"}`)), pollFlags, exitDataErr},
		{"poll: deadline after a redirect", via(reply(200, `{"status":"running"}`, "Retry-After", "600")), append(pollFlags, "--deadline", "5s"), exitTempFail},
		{"poll: deferred after a redirect", via(reply(429, "", "Retry-After", "600")), append(pollFlags, "--check-deadline", "5s"), exitTempFail},
		{"poll: running, then succeeded, after a redirect", via(func() http.HandlerFunc {
			n := 0
			return func(w http.ResponseWriter, r *http.Request) {
				if n++; n == 1 {
					reply(200, `{"status":"running"}`)(w, r)
					return
				}
				reply(200, `{"status":"succeeded"}`)(w, r)
			}
		}()), pollFlags, exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := refused
			if tc.handler != nil {
				base = newScriptServer(t, tc.handler).URL
			}
			target := secretURL(t, base, "/v1/jobs/42")
			if tc.name == "get: not http" {
				target = strings.Replace(target, "http://", "ftp://", 1)
			}
			r := runHeed(t, bin, append(tc.args, target)...)
			assert.Equal(t, tc.code, r.code)
			for _, secret := range cliSecrets {
				assert.NotContains(t, r.stdout, secret)
				assert.NotContains(t, r.stderr, secret)
			}
			if tc.code != exitUsage {
				assert.Contains(t, r.stderr, base+"/v1/jobs/42", "the URL is named, without its secrets")
			}
		})
	}
}
