//go:build race

package main

// raceEnabled: the race detector slows every request several times, so the
// herd test logs its time bounds instead of asserting them.
const raceEnabled = true
