package heed

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamesTableMerge: what one Transport learned is added to what is
// kept; the shapes of the default resource are not kept; past the bound,
// the shapes just learned stay; a bad table kept reads as what it holds
// that is good.
func TestNamesTableMerge(t *testing.T) {
	many := func(n int) []byte {
		got := &namesTable{shapes: map[string]string{}}
		for i := range n {
			got.shapes["GET /search/s"+strconv.Itoa(i)] = "resource search"
		}
		return got.encode()
	}
	cases := []struct {
		name     string
		old      []byte
		learned  namesTable
		fallback string
		shapes   map[string]string
	}{
		{"nothing kept", nil, namesTable{shapes: map[string]string{"GET /search/issues": "resource search"}},
			"", map[string]string{"GET /search/issues": "resource search"}},
		{"a default elected drops its shapes",
			[]byte("\nGET /user\tresource core\nGET /search/issues\tresource search\n"),
			namesTable{fallback: "resource core", shapes: map[string]string{"GET /repos/{}\x2fx": "resource core"}},
			"resource core", map[string]string{"GET /search/issues": "resource search"}},
		{"a default kept when the learner has none",
			[]byte("resource core\n"),
			namesTable{shapes: map[string]string{"POST /graphql": "resource graphql"}},
			"resource core", map[string]string{"POST /graphql": "resource graphql"}},
		{"a shape named anew", []byte("\nGET /search/issues\tresource search\n"),
			namesTable{shapes: map[string]string{"GET /search/issues": "resource code_search"}},
			"", map[string]string{"GET /search/issues": "resource code_search"}},
		{"bad lines left out", []byte("not a name\nGET /a\tresource a\nGET /b\tresource b\tx\n\x00 /c\tresource c\nGET /d\tsomething d\n/e\tresource e\n"),
			namesTable{shapes: map[string]string{}},
			"", map[string]string{"GET /a": "resource a"}},
		{"the bound keeps the shape just learned", many(namesShared),
			namesTable{shapes: map[string]string{"GET /search/new": "resource search"}},
			"", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeNames(tc.learned.merge(tc.old))
			assert.Equal(t, tc.fallback, got.fallback)
			if tc.shapes != nil {
				assert.Equal(t, tc.shapes, got.shapes)
				return
			}
			assert.Len(t, got.shapes, namesShared)
			assert.Equal(t, "resource search", got.shapes["GET /search/new"])
		})
	}
}

// TestNamesByHead: a shape never answered counts against the limit the
// latest answered shape of its head (method and first segment) did, then
// against the default resource; names adopted from other Transports do
// not unseat the heads this one learned.
func TestNamesByHead(t *testing.T) {
	get := func(path string) *http.Request {
		r, err := http.NewRequest("GET", "https://api.test"+path, nil)
		require.NoError(t, err)
		return r
	}
	var n names
	for _, l := range []struct{ path, name string }{
		{"/search/issues", "resource search"},
		{"/user", "resource core"},
		{"/repos/o/r", "resource core"},
		{"/repos/o/r/pulls", "resource core"},
	} {
		learned, _ := n.learn("host", get(l.path), l.name)
		require.True(t, learned)
	}
	assert.True(t, n.adopt("host", &namesTable{shapes: map[string]string{"GET /repos/a/b/c": "resource other"}}))
	for path, want := range map[string]string{
		"/search/code":      "resource search",
		"/search/commits":   "resource search",
		"/repos/x/y":        "resource core",
		"/repos/a/b/c":      "resource other",
		"/gists":            "resource core",
		"/":                 "resource core",
		"/user":             "resource core",
		"/search":           "resource search",
		"/searching/things": "resource core",
	} {
		name, known := n.lookup("host", get(path))
		assert.True(t, known)
		assert.Equal(t, want, name, path)
	}
	for k, want := range map[string]string{"GET /search/issues": "GET /search", "GET /user": "GET /user", "GET /": "GET /", "POST /a/b/c": "POST /a"} {
		assert.Equal(t, want, head(k), k)
	}
}

// FuzzNamesTable: any bytes a gate keeps read as a table of good entries
// within the bound, which encodes and reads back the same; merging into
// them never loses what was just learned. The seed corpus is
// testdata/fuzz/FuzzNamesTable.
func FuzzNamesTable(f *testing.F) {
	f.Add([]byte("resource core\nGET /search/issues\tresource search\n"), "GET /search/code", "resource search")
	f.Add([]byte("\nPOST /api/v10/channels/{}/messages\tbucket abcd1234\n"), "DELETE /api/v10/channels/{}/messages/{}", "bucket ef01")
	f.Add([]byte("\x00\n\t\n\n\n"), "", "")
	f.Fuzz(func(t *testing.T, b []byte, k, name string) {
		got := decodeNames(b)
		if len(got.shapes) > namesShared {
			t.Fatalf("%d shapes", len(got.shapes))
		}
		if got.fallback != "" && !limitName(got.fallback) {
			t.Fatalf("default %q", got.fallback)
		}
		for s, nm := range got.shapes {
			if !shapeText(s) || !limitName(nm) || strings.ContainsAny(s, "\t\n") {
				t.Fatalf("entry %q → %q", s, nm)
			}
		}
		again := decodeNames(got.encode())
		if again.fallback != got.fallback || len(again.shapes) != len(got.shapes) {
			t.Fatalf("%q does not read back: %+v against %+v", got.encode(), again, got)
		}
		for s, nm := range got.shapes {
			if again.shapes[s] != nm {
				t.Fatalf("%q read back as %q, not %q", s, again.shapes[s], nm)
			}
		}
		if shapeText(k) && limitName(name) {
			merged := decodeNames((&namesTable{shapes: map[string]string{k: name}}).merge(b))
			if merged.shapes[k] != name && merged.fallback != name {
				t.Fatalf("merging %q → %q into %q lost it", k, name, b)
			}
		}
	})
}
