package structured

import (
	"strings"
	"testing"
)

// members reads every member of line, or reports false.
func members(line string) (rs, ts []int64, ok bool) {
	l := NewList(line)
	for n := 0; !l.Done(); n++ {
		if n > len(line) {
			panic("Next did not advance")
		}
		r, t, ok := l.Next()
		if !ok {
			return nil, nil, false
		}
		rs, ts = append(rs, r), append(ts, t)
	}
	return rs, ts, true
}

// FuzzParseList checks that a List never panics or loops, that what it
// returns is in range, and that a line that parses parses again, member
// for member, when joined to itself with a comma.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{
		`"default";r=50;t=30`, `a;r=0`, `"a";r=1;t=2,`, `(a b);r=1`,
		`%"f%c3%bc";r=0;t=3;pk=:QXBwLTk5OQ==:`, `@1700000000;r=1`, `?1;r=2;t=-1`,
		`1.5;r=1`, `x;r=1;x="`, `*tok/en:x;r=3;t=4, b;r=1`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.Trim(line, " \t")
		rs, ts, ok := members(line)
		if !ok || line == "" {
			return
		}
		for i := range rs {
			if rs[i] < 0 || ts[i] < -1 {
				t.Fatalf("%q: member %d has r=%d t=%d", line, i, rs[i], ts[i])
			}
		}
		rs2, ts2, ok := members(line + ", " + line)
		if !ok || len(rs2) != 2*len(rs) {
			t.Fatalf("%q parses, but not joined to itself (%v, %d members)", line, ok, len(rs2))
		}
		for i := range rs2 {
			if rs2[i] != rs[i%len(rs)] || ts2[i] != ts[i%len(ts)] {
				t.Fatalf("%q joined to itself: member %d is r=%d t=%d", line, i, rs2[i], ts2[i])
			}
		}
	})
}
