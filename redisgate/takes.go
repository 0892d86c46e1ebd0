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
}

// taken is a send admitted in a bucket and an episode of the inferred
// quota.
type taken struct {
	bucket, episode int64
}

func newTakes() *takes {
	return &takes{scopes: make(map[string][]taken)}
}

// add records a send of scope admitted in bucket. It forgets sends
// admitted more than two buckets before: Redis stopped counting them a
// bucket ago, and an answer that never came (a Transport that was not told
// of it) must not grow the record forever.
func (t *takes) add(scope string, bucket, episode int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.scopes[scope]
	old := 0
	for old < len(b) && b[old].bucket < bucket-2 {
		old++
	}
	b = b[old:]
	// after the equal ones
	i, _ := slices.BinarySearchFunc(b, bucket+1, func(x taken, want int64) int {
		return cmp.Compare(x.bucket, want)
	})
	t.scopes[scope] = slices.Insert(b, i, taken{bucket, episode})
}

// remove forgets the oldest send of scope and returns its bucket and
// episode, or -1, -1 when there is none.
func (t *takes) remove(scope string) (bucket, episode int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.scopes[scope]
	if len(b) == 0 {
		return -1, -1
	}
	if len(b) == 1 {
		delete(t.scopes, scope)
	} else {
		t.scopes[scope] = b[1:]
	}
	return b[0].bucket, b[0].episode
}
