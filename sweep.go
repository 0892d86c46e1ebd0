// The sweep: forgetting the entries of a map whose state is over, a few
// at a time, never by a scan of the map.

package heed

// sweepStep is how many entries each new entry of a swept map checks.
const sweepStep = 2

// sweep queues the keys of a map, each once, in the order they were last
// checked: each new entry of the map checks the sweepStep longest
// unchecked (pass), and forgets those whose state is over, so that
// forgetting costs a constant per new entry. An entry still in use goes
// back to the end of the queue. Not safe for concurrent use: the map's
// lock guards it.
type sweep struct {
	keys []string
	head int
}

// len is the number of keys queued.
func (s *sweep) len() int { return len(s.keys) - s.head }

// push queues k at the end.
func (s *sweep) push(k string) {
	if s.head > 0 && s.head >= len(s.keys)/2 {
		// Half the slice is popped: move the rest to its start, a cost
		// of one copy per key popped, so constant per key.
		n := copy(s.keys, s.keys[s.head:])
		clear(s.keys[n:])
		s.keys, s.head = s.keys[:n], 0
	}
	s.keys = append(s.keys, k)
}

// pass checks the sweepStep keys longest unchecked while more than keep are
// queued: forget reports whether it forgot k's entry; a key not forgotten
// goes back to the end.
func (s *sweep) pass(keep int, forget func(k string) bool) {
	for range sweepStep {
		if s.len() <= keep {
			return
		}
		k := s.keys[s.head]
		s.keys[s.head] = ""
		s.head++
		if !forget(k) {
			s.push(k)
		}
	}
}
