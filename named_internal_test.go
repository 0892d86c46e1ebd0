package heed

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServerName(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		want   string
		global bool
	}{
		{"GitHub resource", http.Header{"X-Ratelimit-Resource": {"code_search"}}, "resource code_search", false},
		{"Discord bucket", http.Header{"X-Ratelimit-Bucket": {"abcd1234"}, "X-Ratelimit-Scope": {"user"}}, "bucket abcd1234", false},
		{"Discord shared", http.Header{"X-Ratelimit-Bucket": {"e1"}, "X-Ratelimit-Scope": {"shared"}}, "bucket e1", false},
		{"a bucket before a resource", http.Header{"X-Ratelimit-Bucket": {"b"}, "X-Ratelimit-Resource": {"core"}}, "bucket b", false},
		{"Discord global", http.Header{"X-Ratelimit-Global": {"true"}, "X-Ratelimit-Bucket": {"abcd"}}, "", true},
		{"global scope", http.Header{"X-Ratelimit-Scope": {" Global "}}, "", true},
		{"global false", http.Header{"X-Ratelimit-Global": {"false"}, "X-Ratelimit-Resource": {"core"}}, "resource core", false},
		{"spaces trimmed", http.Header{"X-Ratelimit-Resource": {" core "}}, "resource core", false},
		{"empty", http.Header{"X-Ratelimit-Resource": {""}}, "", false},
		{"not a token", http.Header{"X-Ratelimit-Resource": {"core search"}}, "", false},
		{"a separator", http.Header{"X-Ratelimit-Bucket": {"a\x1fb"}}, "", false},
		{"too long", http.Header{"X-Ratelimit-Bucket": {strings.Repeat("a", 65)}}, "", false},
		{"none", http.Header{"X-Ratelimit-Remaining": {"0"}}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name, global := serverName(tc.header)
			assert.Equal(t, tc.want, name)
			assert.Equal(t, tc.global, global)
		})
	}
}

func TestShapeAndMajorParameter(t *testing.T) {
	tests := []struct {
		method, path string
		shape, major string
	}{
		{"GET", "/repos/octo/hello/issues/12", "GET /repos/octo/hello/issues/{}", ""},
		{"POST", "/channels/81384788765712384/messages", "POST /channels/{}/messages", "channels/81384788765712384"},
		{"GET", "/guilds/197038439483310086/members", "GET /guilds/{}/members", "guilds/197038439483310086"},
		{"POST", "/webhooks/223704706495545344/3d89bb7572e0fb30d8128367b3b1b44fecd1726de135cbe28a41f8b2f777c372ba2939e72279b94526ff5d1bd4358d65cf11", "POST /webhooks/{}/{}", "webhooks/223704706495545344"},
		{"GET", "/webhooks/42", "GET /webhooks/{}", "webhooks/42"},
		{"GET", "/search/issues", "GET /search/issues", ""},
		{"GET", "/", "GET /", ""},
		{"GET", "/v1/items/a%2F1", "GET /{}/items/{}", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "https://api.test"+tc.path, nil)
			assert.NoError(t, err)
			assert.Equal(t, tc.shape, shape(req))
			assert.Equal(t, tc.major, majorParameter(req.URL.EscapedPath()))
		})
	}
}

func TestNamesAreBounded(t *testing.T) {
	req := func(i int) *http.Request {
		r, _ := http.NewRequest("GET", "https://api.test/repos/"+strings.Repeat("x", i%7)+"/"+string(rune('a'+i%26))+strings.Repeat("y", i/26), nil)
		return r
	}
	search, _ := http.NewRequest("GET", "https://api.test/search/issues", nil)
	var n names
	n.learn("host", &lazyShape{req: search}, "resource search")
	for i := range 2 * namedKeep {
		n.learn("host", &lazyShape{req: req(i)}, "resource core")
	}
	sn := n.scopes["host"]
	assert.LessOrEqual(t, len(sn.shapes), namedKeep)
	assert.Equal(t, "resource core", sn.fallback, "the resource named most")
	assert.Equal(t, "resource search", n.lookup("host", &lazyShape{req: search}), "a shape not of the default resource is kept")
	assert.Equal(t, "resource core", n.lookup("host", &lazyShape{req: req(0)}), "a shape forgotten, or never seen, counts against the default")
	assert.Empty(t, n.lookup("other host", &lazyShape{req: req(0)}), "names are per scope")
	for i := range 2 * namedScopesKeep {
		n.learn("host"+strconv.Itoa(i), &lazyShape{req: search}, "bucket b")
	}
	assert.LessOrEqual(t, len(n.scopes), namedScopesKeep)
	assert.Empty(t, n.scopes["host"+strconv.Itoa(2*namedScopesKeep-1)].fallback, "a bucket is no default")
}

func FuzzServerName(f *testing.F) {
	f.Add("core", "", "", "", "/repos/o/r/issues/1")
	f.Add("", "abcd1234", "user", "", "/channels/1/messages")
	f.Add("", "", "global", "true", "/webhooks/1/tok")
	f.Add("a b", "\x1f", "", "TRUE", "//")
	f.Fuzz(func(t *testing.T, resource, bucket, scope, global, path string) {
		h := http.Header{}
		for k, v := range map[string]string{"X-Ratelimit-Resource": resource, "X-Ratelimit-Bucket": bucket, "X-Ratelimit-Scope": scope, "X-Ratelimit-Global": global} {
			if v != "" {
				h.Set(k, v)
			}
		}
		name, isGlobal := serverName(h)
		if isGlobal && name != "" {
			t.Fatalf("global with a name %q", name)
		}
		if name != "" {
			kind, token, ok := strings.Cut(name, " ")
			if !ok || (kind != "bucket" && kind != "resource") || !nameToken(token) {
				t.Fatalf("name %q", name)
			}
		}
		if markHeader(h)&markNamed == 0 && (name != "" || isGlobal) {
			t.Fatalf("named %q (global %v) without the mark", name, isGlobal)
		}
		req, err := http.NewRequest(http.MethodGet, "https://api.test/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Path = path
		s := shape(req)
		if !strings.HasPrefix(s, "GET ") || strings.ContainsAny(s[4:], "0123456789") {
			t.Fatalf("shape %q of %q", s, path)
		}
		if p := majorParameter(req.URL.EscapedPath()); p != "" && !strings.Contains(req.URL.EscapedPath(), p) {
			t.Fatalf("major parameter %q not in %q", p, req.URL.EscapedPath())
		}
	})
}
