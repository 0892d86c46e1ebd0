// The test binary checks that no goroutine outlives the tests.

package heedasynq_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
