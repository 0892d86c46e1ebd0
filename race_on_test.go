//go:build race

package heed_test

// raceEnabled: the tests run under the race detector, which slows every
// goroutine several times over.
const raceEnabled = true
