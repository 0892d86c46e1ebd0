// Takes: the sends this process's gate admitted and has not heard
// answered.

package redisgate

import (
	"cmp"
	"slices"
	"sync"
)

// takes remembers, per scope, the in-flight bucket of each send this
// process's gate admitted and has not heard answered, so that Done takes
// the send out of the bucket that counts it. Which answered send was which
// is not known, and all count alike: Done takes out the oldest, so that the
// sends still in flight count in the newest buckets, for longest.
type takes struct {
	mu     sync.Mutex
	scopes map[string][]taken // oldest first
	local  map[string]int     // how many of a scope's the local gate admitted
}

// taken is a send admitted in a bucket and an episode of the inferred
// quota, or, when Redis failed, by the local gate (in the bucket of its
// time, so that it is forgotten as the others are).
type taken struct {
	bucket, episode int64
	local           bool
}

// none is what remove returns when there is no send to take out.
var none = taken{bucket: -1, episode: -1}

func newTakes() *takes {
	return &takes{scopes: make(map[string][]taken), local: make(map[string]int)}
}

// add records a send of scope. It forgets sends admitted more than two
// buckets before: Redis stopped counting them a bucket ago, and an answer
// that never came (a Transport that was not told of it) must not grow the
// record forever. It returns how many of the sends it forgot the local
// gate admitted, for the caller to tell it.
func (t *takes) add(scope string, s taken) (forgotLocal int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.scopes[scope]
	old := 0
	for old < len(b) && b[old].bucket < s.bucket-2 {
		if b[old].local {
			forgotLocal++
		}
		old++
	}
	b = b[old:]
	d := -forgotLocal
	if s.local {
		d++
	}
	t.count(scope, d)
	// after the equal ones
	i, _ := slices.BinarySearchFunc(b, s.bucket+1, func(x taken, want int64) int {
		return cmp.Compare(x.bucket, want)
	})
	t.scopes[scope] = slices.Insert(b, i, s)
	return forgotLocal
}

// remove forgets the oldest send of scope and returns it, or none.
func (t *takes) remove(scope string) taken {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.scopes[scope]
	if len(b) == 0 {
		return none
	}
	if len(b) == 1 {
		delete(t.scopes, scope)
	} else {
		t.scopes[scope] = b[1:]
	}
	if b[0].local {
		t.count(scope, -1)
	}
	return b[0]
}

// count adds d to the local sends of scope.
func (t *takes) count(scope string, d int) {
	if d == 0 {
		return
	}
	if n := t.local[scope] + d; n > 0 {
		t.local[scope] = n
	} else {
		delete(t.local, scope)
	}
}

// hasLocal reports whether a send of scope the local gate admitted is
// unanswered.
func (t *takes) hasLocal(scope string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.local[scope] > 0
}
