// Named limits shared: the names a fleet's Transports learned, kept in the
// gate they share, so that a Transport that has not learned a shape's
// limit does not send into it while another Transport found it held.

package heed

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/rules"
)

// In a gate shared by several Transports (a NewGate given to them, or
// redisgate), each learns names from its own answers. A gate heed knows
// marks a request scope while any limit named within it holds or is spent
// (rules.NamedSep), and holds there the sends whose limit their Transport
// does not know: a shape it has no name for, and no default resource.
// Such a send, once held by the marks, reads the names the fleet learned,
// kept in the gate's pace store (PaceGate) under the request scope's
// namesKey, and then goes in the limit named for its shape, or counts
// against the default resource the fleet's first answers elect. A shape
// no Transport of the fleet was ever answered for is then sent, held by
// the request scope's own hold but not by the marks: one send of it may
// be refused, and names it for the fleet; held by the marks, it would wait
// while any limit of the scope holds, which for a busy Discord bot is
// always. A Transport adds every shape it learns, and the vote of its
// first answer, to the names kept, and writes them again whenever a named
// limit holds, so they outlive rules.PaceKeep while the limits are in use.

// namesShared bounds the shapes, and namedVotesKeep the resources voted
// for, kept in a gate per request scope.
const namesShared = 256

// namesKey returns the gate scope the names of scope are kept under.
func namesKey(scope string) string { return scope + rules.NamedSep + "names" }

// namesTable is what is kept of a request scope's names: the time it was
// last written, the names of the shapes, and, per resource, the shapes
// first answered with it.
type namesTable struct {
	at     int64             // Unix seconds
	shapes map[string]string // shape → name
	votes  map[string]int    // resource → shapes first answered with it
}

// encode writes t as its time's line, a line per resource voted for,
// "=name\tvotes", then a line per shape, "shape\tname", in order.
func (t *namesTable) encode() []byte {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(t.at, 10))
	b.WriteByte('\n')
	for _, name := range sortedKeys(t.votes) {
		b.WriteString("=" + name + "\t" + strconv.Itoa(t.votes[name]) + "\n")
	}
	for _, k := range sortedKeys(t.shapes) {
		b.WriteString(k + "\t" + t.shapes[k] + "\n")
	}
	return []byte(b.String())
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeNames reads a table encode wrote. A line that is not a shape and a
// limit's name, nor a resource and a count, is left out, and so is every
// shape past namesShared and resource past namedVotesKeep: what is kept is
// a hint, and a name it lacks is learned from the server's answer.
func decodeNames(b []byte) *namesTable {
	t := &namesTable{shapes: make(map[string]string), votes: make(map[string]int)}
	lines := strings.Split(string(b), "\n")
	if at, err := strconv.ParseInt(lines[0], 10, 64); err == nil && at >= 0 {
		t.at = at
	}
	for _, line := range lines[1:] {
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		if name, vote := strings.CutPrefix(k, "="); vote {
			n, err := strconv.Atoi(v)
			if err == nil && n > 0 && n <= namedKeep && strings.HasPrefix(name, "resource ") && limitName(name) && len(t.votes) < namedVotesKeep {
				t.votes[name] = n
			}
			continue
		}
		if shapeText(k) && limitName(v) && len(t.shapes) < namesShared {
			t.shapes[k] = v
		}
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
// returns the result, written at t's time: its shapes, which stay past the
// bound, and its votes, added to the fleet's.
func (t *namesTable) merge(old []byte) []byte {
	kept := decodeNames(old)
	kept.at = max(kept.at, t.at)
	for k, name := range t.shapes {
		kept.shapes[k] = name
	}
	for k := range kept.shapes {
		if len(kept.shapes) <= namesShared {
			break
		}
		if _, mine := t.shapes[k]; !mine {
			delete(kept.shapes, k)
		}
	}
	for name, n := range t.votes {
		if _, ok := kept.votes[name]; ok || len(kept.votes) < namedVotesKeep {
			kept.votes[name] = min(kept.votes[name]+n, namedKeep)
		}
	}
	return kept.encode()
}

// shareNames tells the gate of the names learned in t, for scope, or, with
// t nil, writes the names kept again, so they are not forgotten while a
// named limit holds. A gate that fails is logged by nobody: the names are
// a hint.
func (t *Transport) shareNames(ctx context.Context, scope string, learned *namesTable) {
	if !t.shares {
		return
	}
	now := time.Now()
	if !t.named.written(scope, now, learned != nil) {
		return
	}
	if learned == nil {
		learned = &namesTable{}
	}
	learned.at = now.Unix()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), paceTimeout)
	defer cancel()
	_ = t.paces.Pace(ctx, namesKey(scope), learned.merge)
}

// namesRewrite is how often a Transport writes the names kept in a shared
// gate again while a named limit holds: well within rules.PaceKeep.
const namesRewrite = rules.PaceKeep / 4

// written reports whether the names kept of scope are to be written at
// now, and records that they are: always for names learned (learned),
// else once per namesRewrite.
func (n *names) written(scope string, now time.Time, learned bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	sn := n.scopes[scope]
	if sn == nil || !learned && now.Sub(sn.shared) < namesRewrite {
		return learned
	}
	sn.shared = now
	return true
}

// readNames adds the names the Transports sharing the gate learned of
// scope to those t learned.
func (t *Transport) readNames(ctx context.Context, scope string) {
	if !t.shares {
		return
	}
	var kept []byte
	ctx, cancel := context.WithTimeout(ctx, paceTimeout)
	defer cancel()
	if err := t.paces.Pace(ctx, namesKey(scope), func(old []byte) []byte {
		kept = old
		return old
	}); err != nil || kept == nil {
		return
	}
	t.named.adopt(scope, decodeNames(kept))
}

// adopt adds the names other Transports learned of scope, in got, to those
// n learned: the shapes it does not know, and the default resource the
// fleet's votes elect, when it has none.
func (n *names) adopt(scope string, got *namesTable) {
	if len(got.shapes) == 0 && len(got.votes) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	sn := n.scope(scope, time.Now())
	if sn == nil {
		return
	}
	for k, name := range got.shapes {
		if _, known := sn.shapes[k]; !known && len(sn.shapes) < namedKeep {
			sn.shapes[k] = name
		}
	}
	if sn.fallback == "" {
		sn.fallback = (&scopeNames{votes: got.votes}).elect()
	}
	n.any.Store(true)
}
