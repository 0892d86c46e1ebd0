//go:build !race

package main

// raceEnabled: see scenario_herd_race_test.go.
const raceEnabled = false
