package heed

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestTimeSourceReadsTheClock: a timeSource's reading is the clock's, on
// the wall and on the monotonic clock, whether its base is fresh, near its
// rebase, just past it, or days old; and wallAt gives the wall reading of
// a time on the monotonic clock, with no monotonic reading of its own.
func TestTimeSourceReadsTheClock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []time.Duration // sleeps before each reading
	}{
		{"fresh", []time.Duration{0, time.Millisecond, 10 * time.Millisecond}},
		{"about the rebase", []time.Duration{clockRebase - time.Nanosecond, time.Nanosecond, clockRebase}},
		{"days apart", []time.Duration{72 * time.Hour, time.Millisecond, 96 * time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var ts timeSource
				for _, d := range tc.steps {
					time.Sleep(d)
					got, count := ts.now()
					assert.Equal(t, mono(got), count, "its mono count")
					want := time.Now()
					assert.True(t, got.Equal(want), "%v, want %v", got, want)
					assert.Equal(t, want.UnixNano(), got.UnixNano(), "the wall reading")
					assert.Zero(t, time.Since(got), "the monotonic reading")
					later := got.Add(3 * time.Second)
					at := wallAt(later)
					assert.Equal(t, later.UnixNano(), at.UnixNano())
					assert.Equal(t, at, at.Round(0), "no monotonic reading")
				}
			})
		})
	}
}
