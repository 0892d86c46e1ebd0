package heedriver_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind, after stopping
// the PostgreSQL server the tests shared, if one was started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(stopPostgresAfter{m})
}

// stopPostgresAfter runs the tests, then stops the shared PostgreSQL.
type stopPostgresAfter struct{ m *testing.M }

func (s stopPostgresAfter) Run() int {
	code := s.m.Run()
	stopPostgres()
	return code
}
