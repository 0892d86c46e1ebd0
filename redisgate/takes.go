package redisgate

import (
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
	scopes map[string][]int64 // buckets, oldest first
}

func newTakes() *takes {
	return &takes{scopes: make(map[string][]int64)}
}

// add records a send of scope admitted in bucket. It forgets sends
// admitted more than two buckets before: Redis stopped counting them a
// bucket ago, and an answer that never came (a Transport that was not told
// of it) must not grow the record forever.
func (t *takes) add(scope string, bucket int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.scopes[scope]
	old := 0
	for old < len(b) && b[old] < bucket-2 {
		old++
	}
	b = b[old:]
	i, _ := slices.BinarySearch(b, bucket+1) // after the equal ones
	t.scopes[scope] = slices.Insert(b, i, bucket)
}

// remove forgets the oldest send of scope and returns its bucket, or -1
// when there is none.
func (t *takes) remove(scope string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.scopes[scope]
	if len(b) == 0 {
		return -1
	}
	if len(b) == 1 {
		delete(t.scopes, scope)
		return b[0]
	}
	t.scopes[scope] = b[1:]
	return b[0]
}
