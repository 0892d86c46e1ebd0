//go:build !race

package redisgate

// raceEnabled: the tests run under the race detector, which slows every
// goroutine several times over.
const raceEnabled = false
