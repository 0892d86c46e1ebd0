package heed

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/internal/rules"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// samplePace is a pace with every field set.
func samplePace() paceState {
	t0 := time.Unix(1_800_000_000, 123456789)
	p := paceState{
		enabled: true, fillRate: 42.5, capacity: 5.5, issued: 120, granted: 118.25, lastFill: t0.Add(time.Second),
		floor: 1, lastMax: 60, lastThrottle: t0.Add(2 * time.Second), k: 1.7, long: true,
	}
	p.rel = release{on: true, fitted: true, firstEp: true, window: true, burst: 11, fitRate: 45, fitAt: t0.Add(3 * time.Second),
		reopen: t0.Add(4 * time.Second), epStart: t0.Add(4 * time.Second), epServed: 20,
		epRefused: t0.Add(5 * time.Second), step: t0.Add(4500 * time.Millisecond), stepServed: 3,
		quoted: true, spentAt: t0.Add(3500 * time.Millisecond), spentServed: 2, epSpent: t0.Add(1500 * time.Millisecond),
		drain: 19.5, drainEp: 20.25, let: 37, lapsed: 118, refused: t0.Add(4900 * time.Millisecond),
		spread: t0.Add(4010 * time.Millisecond)}
	for i := range 5 {
		p.rel.served = append(p.rel.served, t0.Add(time.Duration(4000+i*20)*time.Millisecond))
	}
	return p
}

// TestPaceStateRoundTrips: what encode writes, decode reads back as it
// was, for a state with every field set, a fresh one, and one full of
// served sends.
func TestPaceStateRoundTrips(t *testing.T) {
	full := samplePace()
	full.rel.served = nil
	for i := range releaseKeep {
		full.rel.served = append(full.rel.served, time.Unix(0, int64(i+1)*int64(time.Millisecond)))
	}
	for name, p := range map[string]paceState{"every field": samplePace(), "fresh": {}, "full": full} {
		t.Run(name, func(t *testing.T) {
			got, err := decodePace(p.encode())
			require.NoError(t, err)
			assert.Equal(t, p.encode(), got.encode())
			assert.Equal(t, p.enabled, got.enabled)
			assert.Equal(t, p.rel.burst, got.rel.burst)
			assert.Equal(t, len(p.rel.served), len(got.rel.served))
			assert.True(t, p.rel.epStart.Equal(got.rel.epStart))
			assert.Equal(t, p.rel.epStart.IsZero(), got.rel.epStart.IsZero())
			assert.Equal(t, p.rel.firstEp, got.rel.firstEp)
			assert.Equal(t, p.rel.window, got.rel.window)
		})
	}
}

// TestPaceStateRefusesWhatIsNotOne: bytes that are not a state heed wrote
// decode to an error, and leave the state they were read into as it was.
func TestPaceStateRefusesWhatIsNotOne(t *testing.T) {
	sample := samplePace()
	good := sample.encode()
	at := func(i int, b byte) []byte {
		c := append([]byte(nil), good...)
		c[i] = b
		return c
	}
	number := func(i int, f float64) []byte { // the i-th float of the fixed fields
		c := append([]byte(nil), good...)
		bits := math.Float64bits(f)
		for j := range 8 {
			c[2+8*i+j] = byte(bits >> (8 * j))
		}
		return c
	}
	for name, b := range map[string][]byte{
		"nil":               nil,
		"short":             good[:10],
		"cut":               good[:len(good)-1],
		"longer":            append(append([]byte(nil), good...), 0),
		"another version":   at(0, paceVersion+1),
		"unknown flags":     at(1, 0xff),
		"NaN rate":          number(0, math.NaN()),
		"infinite tokens":   number(2, math.Inf(1)),
		"negative rate":     number(0, -1),
		"huge burst":        number(8, 1e300),
		"negative burst":    number(8, -3),
		"on at no rate":     number(0, 0),
		"on at a tiny rate": number(0, 1e-300),
		"on with no room":   number(1, 0.5),
		"negative tokens":   number(2, -1),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodePace(b)
			assert.ErrorIs(t, err, errPaceState)
			p := samplePace()
			assert.False(t, p.decode(b))
			assert.Equal(t, good, p.encode(), "left as it was")
		})
	}
}

// FuzzPaceState: whatever a gate hands back, decoding it never panics, and
// what decodes encodes to the same bytes and decodes again the same.
func FuzzPaceState(f *testing.F) {
	sample := samplePace()
	f.Add(sample.encode())
	f.Add((&paceState{}).encode())
	f.Add([]byte{})
	f.Add([]byte{paceVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePace(b)
		if err != nil {
			return
		}
		again := p.encode()
		q, err := decodePace(again)
		if err != nil {
			t.Fatalf("a decoded state does not decode once encoded: %v", err)
		}
		if string(q.encode()) != string(again) {
			t.Fatalf("encoding is not stable")
		}
		if len(p.rel.served) > releaseKeep || math.IsNaN(p.fillRate) || p.fillRate < 0 {
			t.Fatalf("decoded out of range: %+v", p)
		}
	})
}

// TestMemGatePace: heed's own gate keeps a scope's pace for rules.PaceKeep after
// its last change, forgets it after, deletes it on nil, and writes nothing
// for an update that changes nothing.
func TestMemGatePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate().(*memGate)
		ctx := context.Background()
		var seen []byte
		look := func(b []byte) []byte { seen = b; return b }
		require.NoError(t, g.Pace(ctx, "s", look))
		assert.Nil(t, seen, "none yet")
		require.NoError(t, g.Pace(ctx, "s", func([]byte) []byte { return []byte("a") }))
		require.NoError(t, g.Pace(ctx, "s", look))
		assert.Equal(t, []byte("a"), seen)
		assert.Nil(t, seenOf(t, g, "other"), "scopes apart")

		time.Sleep(rules.PaceKeep - time.Second)
		require.NoError(t, g.Pace(ctx, "s", look), "a look is no change")
		time.Sleep(time.Second)
		assert.Nil(t, seenOf(t, g, "s"), "forgotten rules.PaceKeep after its last change")

		require.NoError(t, g.Pace(ctx, "s", func([]byte) []byte { return []byte("b") }))
		require.NoError(t, g.Pace(ctx, "s", func([]byte) []byte { return nil }))
		assert.Nil(t, seenOf(t, g, "s"), "nil deletes")
	})
}

func seenOf(t *testing.T, g *memGate, scope string) []byte {
	var seen []byte
	require.NoError(t, g.Pace(context.Background(), scope, func(b []byte) []byte { seen = b; return b }))
	return seen
}
