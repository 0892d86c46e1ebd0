// Named limits shared: the names a fleet's Transports learned, kept in the
// gate they share, so that a Transport that learned none does not send
// into a limit another one learned is held.

package heed

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// A gate heed knows (NewGate's, redisgate) holds a request scope's sends
// from a Transport that knows none of its names while any limit named
// within it holds or is spent (rules.NamedSep): such a Transport cannot
// tell which limit its send counts against. When that holds one of its
// sends, the Transport reads the names the others learned, kept in the
// gate's pace store (PaceGate) under the request scope's namesKey, and
// sends in the limit named for the request's shape, or, knowing the
// scope's names now, in the request scope unheld by the others' limits. A
// Transport that learns a shape's name, or a new default resource, adds it
// there. With no names kept (none learned, or forgotten after
// rules.PaceKeep unchanged), the send waits for the named limits' holds.

// namesShared bounds the shapes kept in a gate per request scope; the
// shapes of the default resource are not kept (its name is).
const namesShared = 256

// namesKey returns the gate scope the names of scope are kept under.
func namesKey(scope string) string { return scope + rules.NamedSep + "names" }

// namesTable is what is kept of a request scope's names: its default
// resource, and the names of the shapes that count against another.
type namesTable struct {
	fallback string
	shapes   map[string]string // shape → name
}

// encode writes t as the default resource's line, then a line per shape,
// "shape\tname", in order.
func (t *namesTable) encode() []byte {
	keys := make([]string, 0, len(t.shapes))
	for k := range t.shapes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(t.fallback)
	b.WriteByte('\n')
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('\t')
		b.WriteString(t.shapes[k])
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// decodeNames reads a table encode wrote. A line that is not a shape and a
// limit's name, or a default that is not a name, is left out, and so is
// every shape past namesShared: what is kept is a hint, and a name it
// lacks is learned from the server's answer.
func decodeNames(b []byte) *namesTable {
	t := &namesTable{shapes: make(map[string]string)}
	lines := strings.Split(string(b), "\n")
	if limitName(lines[0]) {
		t.fallback = lines[0]
	}
	for _, line := range lines[1:] {
		k, name, ok := strings.Cut(line, "\t")
		if !ok || !shapeText(k) || !limitName(name) || len(t.shapes) >= namesShared {
			continue
		}
		t.shapes[k] = name
	}
	return t
}

// limitName reports whether s is a name serverName returns.
func limitName(s string) bool {
	for _, kind := range []string{"resource ", "bucket "} {
		if rest, ok := strings.CutPrefix(s, kind); ok {
			return nameToken(rest)
		}
	}
	return false
}

// shapeText reports whether s can be a shape: a method token, a space and
// a path of printable ASCII, at most 2 KiB.
func shapeText(s string) bool {
	method, path, ok := strings.Cut(s, " ")
	if !ok || method == "" || len(s) > 2048 || !strings.HasPrefix(path, "/") && path != "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' && i != len(method) || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// merge adds what one Transport learned, in t, to what is kept, old, and
// returns the result: t's default resource when it has one, and its
// shapes, but not those of the default resource.
func (t *namesTable) merge(old []byte) []byte {
	kept := decodeNames(old)
	if t.fallback != "" {
		kept.fallback = t.fallback
	}
	for k, name := range t.shapes {
		kept.shapes[k] = name
	}
	for k, name := range kept.shapes {
		if name == kept.fallback {
			delete(kept.shapes, k)
		}
	}
	for k := range kept.shapes {
		if len(kept.shapes) <= namesShared {
			break
		}
		if _, mine := t.shapes[k]; !mine {
			delete(kept.shapes, k)
		}
	}
	return kept.encode()
}

// shareNames tells the gate of the names learned in t, for scope; a gate
// that fails is logged by nobody: the names are a hint.
func (t *Transport) shareNames(ctx context.Context, scope string, learned *namesTable) {
	if !t.shares {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), paceTimeout)
	defer cancel()
	_ = t.paces.Pace(ctx, namesKey(scope), learned.merge)
}

// readNames reads the names other Transports learned of scope, and reports
// whether the Transport now knows some of scope's names.
func (t *Transport) readNames(ctx context.Context, scope string) bool {
	if !t.shares {
		return false
	}
	var kept []byte
	ctx, cancel := context.WithTimeout(ctx, paceTimeout)
	defer cancel()
	if err := t.paces.Pace(ctx, namesKey(scope), func(old []byte) []byte {
		kept = old
		return old
	}); err != nil || kept == nil {
		return false
	}
	got := decodeNames(kept)
	if got.fallback == "" && len(got.shapes) == 0 {
		return false
	}
	return t.named.adopt(scope, got)
}

// adopt adds the names other Transports learned of scope, in got, to those
// n learned: shapes it does not know, and the default resource when it
// has none. It reports whether n knows scope's names now.
func (n *names) adopt(scope string, got *namesTable) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	sn := n.scope(scope, now)
	if sn == nil {
		return false
	}
	for k, name := range got.shapes {
		if _, known := sn.shapes[k]; !known && len(sn.shapes) < namedKeep {
			sn.shapes[k] = name
			if _, ok := sn.heads[head(k)]; !ok {
				sn.nameHead(k, name)
			}
		}
	}
	if sn.fallback == "" {
		sn.fallback = got.fallback
	}
	n.any.Store(true)
	return true
}
