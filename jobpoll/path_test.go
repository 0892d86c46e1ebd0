package jobpoll_test

import (
	"testing"

	"github.com/heed-go/heed/jobpoll"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		in, canon string // canon: "" means the same as in
		err       string // "" means valid
	}{
		{in: "status"},
		{in: "properties.status"},
		{in: "operations[0].state"},
		{in: "[2].status"},
		{in: "a[0][1].b"},
		{in: `odd\.name.x`},
		{in: `a\[b\]\\c`},
		{in: `\status`, canon: "status"},
		{in: "a[007]", canon: "a[7]"},
		{in: " spaced key "},
		{in: "", err: "empty field path"},
		{in: ".", err: "empty name"},
		{in: ".status", err: "empty name"},
		{in: "status.", err: "trailing '.'"},
		{in: "a..b", err: "empty name"},
		{in: "a.[0]", err: "empty name"},
		{in: "a[", err: "unclosed"},
		{in: "a[]", err: "empty"},
		{in: "a[-1]", err: "not a decimal"},
		{in: "a[x]", err: "not a decimal"},
		{in: "a[99999999999999999999]", err: "too large"},
		{in: "a[0]b", err: "expected '.' or '['"},
		{in: "a]b", err: "unexpected ']'"},
		{in: `a\`, err: "trailing backslash"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, err := jobpoll.ParsePath(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			canon := tc.canon
			if canon == "" {
				canon = tc.in
			}
			assert.Equal(t, canon, p.String())
		})
	}
}

func TestPathLookup(t *testing.T) {
	const doc = `{
		"status": "succeeded",
		"properties": {"status": "Running", "progress": 42.5, "done": false, "nothing": null},
		"operations": [{"state": "InProgress"}, {"state": "JobComplete"}],
		"a.b": {"[x]": "escaped"},
		"grid": [[1, 2], [3, 4]]
	}`
	for _, tc := range []struct {
		path, want, err string
	}{
		{path: "status", want: "succeeded"},
		{path: "properties.status", want: "Running"},
		{path: "properties.progress", want: "42.5"},
		{path: "properties.done", want: "false"},
		{path: "operations[1].state", want: "JobComplete"},
		{path: `a\.b.\[x\]`, want: "escaped"},
		{path: "grid[1][0]", want: "3"},
		{path: "missing", err: "field missing: missing"},
		{path: "properties.nothing", err: "not a string, number or boolean: null"},
		{path: "properties", err: "not a string, number or boolean: an object"},
		{path: "operations", err: "an array"},
		{path: "operations[2].state", err: "field operations[2]: missing: array has 2 elements"},
		{path: "status.x", err: "field status.x: not in an object: a string"},
		{path: "status[0]", err: "not in an array: a string"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p, err := jobpoll.ParsePath(tc.path)
			require.NoError(t, err)
			got, err := p.Lookup([]byte(doc))
			if tc.err != "" {
				var fe *jobpoll.FieldError
				require.ErrorAs(t, err, &fe)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	p, err := jobpoll.ParsePath("status")
	require.NoError(t, err)
	for _, bad := range []string{"", "not json", `{"status":"x"} trailing`, `{"status":`} {
		_, err := p.Lookup([]byte(bad))
		var fe *jobpoll.FieldError
		assert.ErrorAs(t, err, &fe, "%q", bad)
		assert.ErrorContains(t, err, "body is not JSON", "%q", bad)
	}
	_, err = jobpoll.Path{}.Lookup([]byte(`{}`))
	assert.ErrorContains(t, err, "empty path")
}

// FuzzParsePath asserts that ParsePath never panics, and that every path it
// accepts prints in a form it parses back to the same path.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"status", "properties.status", "jobs[0].state", "[1][2]", `a\.b`, "a..b", "a[", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := jobpoll.ParsePath(s)
		if err != nil {
			return
		}
		out := p.String()
		q, err := jobpoll.ParsePath(out)
		require.NoError(t, err, "String() of %q gave %q", s, out)
		require.Equal(t, p, q)
		require.Equal(t, out, q.String())
		_, _ = p.Lookup([]byte(`{"status":"x","a":[{"b":1}]}`))
	})
}
