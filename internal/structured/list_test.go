package structured

import (
	"slices"
	"testing"
)

func TestList(t *testing.T) {
	for _, c := range []struct {
		line   string
		rs, ts []int64
		ok     bool
	}{
		{``, nil, nil, true},
		{`"default";r=50;t=30`, []int64{50}, []int64{30}, true},
		{`a;r=5;t=1, b;r=2`, []int64{5, 2}, []int64{1, -1}, true},
		{`a;r=1;r=2`, []int64{2}, []int64{-1}, true},
		{`%"f%c3%bc";r=0;t=3;pk=:QXBwLTk5OQ==:`, []int64{0}, []int64{3}, true},
		{`@-5;r=1`, []int64{1}, []int64{-1}, true},
		{`a;t=1`, nil, nil, false},
		{`a;r=-1`, nil, nil, false},
		{`a;r=1.0`, nil, nil, false},
		{`a;r=1;t=?1`, nil, nil, false},
		{`a;r=1,`, nil, nil, false},
		{`a;r=1 b;r=1`, nil, nil, false},
		{`(a b);r=1`, nil, nil, false},
		{`%"%ff";r=1`, nil, nil, false},
		{`a;r=1234567890123456`, nil, nil, false},
	} {
		rs, ts, ok := members(c.line)
		if ok != c.ok || !slices.Equal(rs, c.rs) || !slices.Equal(ts, c.ts) {
			t.Errorf("%q: got %v %v %v, want %v %v %v", c.line, rs, ts, ok, c.rs, c.ts, c.ok)
		}
	}
}
