package heed

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlightGoneWraps: the count of sends gone is kept modulo
// 2^flightBits (flight), so it wraps; its wrap must not carry into the
// count of sends in flight above it. One send out and answered across the
// wrap leaves nothing in flight, and a ceiling of one lets the next send go.
func TestFlightGoneWraps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight uint64 // sends in flight before
		gone     uint64 // sends gone before, modulo 2^flightBits
	}{
		{"far from the wrap", 0, 12345},
		{"at the wrap, none in flight", 0, flightGone},
		{"at the wrap, three in flight", 3, flightGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f flight
			f.w.Store(tc.inFlight<<flightBits | tc.gone)
			level, gone := f.add()
			assert.Equal(t, int64(tc.inFlight+1), level, "the send's level")
			assert.Equal(t, int64((tc.gone+1)&flightGone), gone, "the sends gone")
			assert.Equal(t, int64(tc.inFlight), f.sub(), "in flight once it is answered")
			assert.Equal(t, int64(tc.inFlight), f.load(), "in flight")

			// What the learned cap reads: a cap above what is in flight
			// lets one more send go.
			c := ceiling{limit: int64(tc.inFlight) + 1, inflight: &f}
			assert.True(t, c.free(), "a cap of %d with %d in flight", c.limit, tc.inFlight)
		})
	}
}
