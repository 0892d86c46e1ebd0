package rules

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://u:p@api.example/v1/x?key=s#f", "https://api.example/v1/x"},
		{"http://api.example", "http://api.example"},
		{"https://api.example/a%2Fb?x=1", "https://api.example/a%2Fb"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, RedactURL(u))
	}
	opaque := &url.URL{Scheme: "https", Host: "api.example", Opaque: "//alice:pw@api.example/v1/x?sig=1"}
	assert.Equal(t, "https://api.example/v1/x", RedactURL(opaque))
	assert.Equal(t, "mailto:someone", RedactURL(&url.URL{Scheme: "mailto", Opaque: "someone?subject=x"}))
	assert.Empty(t, RedactURL(nil))
}

func TestDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(10*time.Second))
	defer cancel()
	b := NewDeadline(ctx, start, 4*time.Second)
	assert.Equal(t, start.Add(4*time.Second), b.End, "the earlier end wins")
	assert.Equal(t, 4*time.Second, b.Left(start))
	assert.Zero(t, b.Left(start.Add(time.Minute)))
	assert.True(t, b.Fits(start, 3*time.Second, 3*time.Second, time.Minute, time.Second))
	assert.False(t, b.Fits(start, 3*time.Second, 3*time.Second, time.Minute, 2*time.Second), "reserve counts")
	assert.False(t, b.Fits(start, 2*time.Minute, 0, time.Minute, 0), "over MaxWait")
	none := NewDeadline(context.Background(), start, 0)
	assert.False(t, none.Bound)
	assert.Zero(t, none.Left(start))
	assert.True(t, none.Fits(start, time.Minute, time.Hour, time.Minute, 0))
}

func TestIdempotentAndKey(t *testing.T) {
	for _, m := range []string{"", "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"} {
		assert.True(t, Idempotent(m), m)
	}
	for _, m := range []string{"POST", "PATCH", "CONNECT"} {
		assert.False(t, Idempotent(m), m)
	}
	h := map[string][]string{"X-Idempotency-Key": {"x"}, "X-Mine": {"m"}}
	assert.Equal(t, "m", RequestKey(h, "X-Mine"))
	assert.Equal(t, "x", RequestKey(h, ""))
	assert.Empty(t, RequestKey(nil, ""))
}

func TestSleepAndRand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	assert.NoError(t, Sleep(context.Background(), time.Millisecond))
	for range 100 {
		d := RandUpTo(time.Second)
		assert.GreaterOrEqual(t, d, time.Duration(0))
		assert.LessOrEqual(t, d, time.Second)
	}
	assert.Zero(t, RandUpTo(-1))
	assert.GreaterOrEqual(t, RandUpTo(1<<63-1), time.Duration(0))
}
