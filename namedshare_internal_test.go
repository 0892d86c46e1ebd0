package heed

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getShape returns a GET of path on api.test.
func getShape(t *testing.T, path string) *http.Request {
	r, err := http.NewRequest("GET", "https://api.test"+path, nil)
	require.NoError(t, err)
	return r
}

// TestNamesTableMerge: what one Transport learned is added to what is
// kept: its shapes, which stay past the bound, and its votes, added up;
// a bad table kept reads as what it holds that is good.
func TestNamesTableMerge(t *testing.T) {
	many := func(n int) []byte {
		got := &namesTable{shapes: map[string]string{}}
		for i := range n {
			got.shapes["GET /search/s"+strconv.Itoa(i)] = "resource search"
		}
		return got.encode()
	}
	cases := []struct {
		name    string
		old     []byte
		learned namesTable
		at      int64
		shapes  map[string]string
		votes   map[string]int
	}{
		{"nothing kept", nil, namesTable{at: 7, shapes: map[string]string{"GET /search/issues": "resource search"}, votes: map[string]int{"resource search": 1}},
			7, map[string]string{"GET /search/issues": "resource search"}, map[string]int{"resource search": 1}},
		{"votes add up, shapes of every limit stay",
			[]byte("9\n=resource core\t2\nGET /user\tresource core\nGET /search/issues\tresource search\n"),
			namesTable{at: 8, shapes: map[string]string{"GET /repos/{}": "resource core"}, votes: map[string]int{"resource core": 1}},
			9, map[string]string{"GET /user": "resource core", "GET /search/issues": "resource search", "GET /repos/{}": "resource core"}, map[string]int{"resource core": 3}},
		{"a shape named anew", []byte("1\nGET /search/code\tresource search\n"),
			namesTable{at: 2, shapes: map[string]string{"GET /search/code": "resource code_search"}},
			2, map[string]string{"GET /search/code": "resource code_search"}, map[string]int{}},
		{"a refresh changes the time alone", []byte("1\n=resource core\t2\nGET /user\tresource core\n"),
			namesTable{at: 5},
			5, map[string]string{"GET /user": "resource core"}, map[string]int{"resource core": 2}},
		{"bad lines left out", []byte("x\nGET /a\tresource a\nGET /b\tresource b\tx\n\x00 /c\tresource c\nGET /d\tsomething d\n/e\tresource e\n=bucket f\t2\n=resource g\t-1\n=resource h\tx\n"),
			namesTable{},
			0, map[string]string{"GET /a": "resource a"}, map[string]int{}},
		{"the bound keeps the shape just learned", many(namesShared),
			namesTable{shapes: map[string]string{"GET /search/new": "resource search"}},
			0, nil, map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeNames(tc.learned.merge(tc.old))
			assert.Equal(t, tc.at, got.at)
			assert.Equal(t, tc.votes, got.votes)
			if tc.shapes != nil {
				assert.Equal(t, tc.shapes, got.shapes)
				return
			}
			assert.Len(t, got.shapes, namesShared)
			assert.Equal(t, "resource search", got.shapes["GET /search/new"])
		})
	}
}

// TestNamesAdopted: a Transport adds the fleet's shapes it does not know
// and, with no default of its own, the one the fleet's votes elect; it
// keeps its own.
func TestNamesAdopted(t *testing.T) {
	var n names
	n.adopt("host", &namesTable{shapes: map[string]string{"GET /search/issues": "resource search"}, votes: map[string]int{"resource core": 3, "resource search": 1}})
	for path, want := range map[string]string{"/search/issues": "resource search", "/repos/o/r": "resource core"} {
		name, known := n.lookup("host", getShape(t, path))
		assert.True(t, known)
		assert.Equal(t, want, name, path)
	}
	var tied names
	tied.adopt("host", &namesTable{votes: map[string]int{"resource core": 2, "resource search": 2}})
	name, _ := tied.lookup("host", getShape(t, "/repos/o/r"))
	assert.Empty(t, name, "no default from a tie")
	n.adopt("host", &namesTable{shapes: map[string]string{"GET /search/issues": "resource other"}, votes: map[string]int{"resource other": 9}})
	name, _ = n.lookup("host", getShape(t, "/search/issues"))
	assert.Equal(t, "resource search", name, "its own name stays")
	name, _ = n.lookup("host", getShape(t, "/gists"))
	assert.Equal(t, "resource core", name, "its own default stays")
}

// FuzzNamesTable: any bytes a gate keeps read as a table of good entries
// within the bounds, which encodes and reads back the same; merging into
// them never loses what was just learned. The seed corpus is
// testdata/fuzz/FuzzNamesTable.
func FuzzNamesTable(f *testing.F) {
	f.Add([]byte("1764800000\n=resource core\t3\nGET /search/issues\tresource search\n"), "GET /search/code", "resource search")
	f.Add([]byte("0\nPOST /api/v10/channels/{}/messages\tbucket abcd1234\n"), "DELETE /api/v10/channels/{}/messages/{}", "bucket ef01")
	f.Add([]byte("\x00\n\t\n=\t\n\n"), "", "")
	f.Fuzz(func(t *testing.T, b []byte, k, name string) {
		got := decodeNames(b)
		if len(got.shapes) > namesShared || len(got.votes) > namedVotesKeep || got.at < 0 {
			t.Fatalf("%d shapes, %d votes, at %d", len(got.shapes), len(got.votes), got.at)
		}
		for s, nm := range got.shapes {
			if !shapeText(s) || !limitName(nm) || strings.ContainsAny(s, "\t\n") {
				t.Fatalf("entry %q → %q", s, nm)
			}
		}
		for nm, v := range got.votes {
			if !limitName(nm) || v <= 0 {
				t.Fatalf("vote %q %d", nm, v)
			}
		}
		again := decodeNames(got.encode())
		if again.at != got.at || len(again.shapes) != len(got.shapes) || len(again.votes) != len(got.votes) {
			t.Fatalf("%q does not read back: %+v against %+v", got.encode(), again, got)
		}
		for s, nm := range got.shapes {
			if again.shapes[s] != nm {
				t.Fatalf("%q read back as %q, not %q", s, again.shapes[s], nm)
			}
		}
		if shapeText(k) && limitName(name) {
			merged := decodeNames((&namesTable{shapes: map[string]string{k: name}}).merge(b))
			if merged.shapes[k] != name {
				t.Fatalf("merging %q → %q into %q lost it", k, name, b)
			}
		}
	})
}
