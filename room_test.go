package heed

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestBucketRoom reads Shopify REST's leaky bucket fill as the room it
// leaves (shopify.dev, REST Admin API rate limits: "X-Shopify-Shop-Api-
// Call-Limit: 32/40"), and reads nothing from a value that is not one.
func TestBucketRoom(t *testing.T) {
	tests := []struct {
		name  string
		value []string
		room  int64
		ok    bool
	}{
		{"the documentation's example", []string{"32/40"}, 8, true},
		{"a full bucket", []string{"40/40"}, 0, true},
		{"one left", []string{"39/40"}, 1, true},
		{"empty", []string{"0/40"}, 40, true},
		{"Shopify Plus's size", []string{"12/400"}, 388, true},
		{"spaces around", []string{" 3 / 80 "}, 77, true},
		{"over full: no room, not a negative one", []string{"41/40"}, 0, true},
		{"no size", []string{"39/"}, 0, false},
		{"a size of 0", []string{"0/0"}, 0, false},
		{"no slash", []string{"39"}, 0, false},
		{"signed", []string{"+3/40"}, 0, false},
		{"negative", []string{"-3/40"}, 0, false},
		{"a fraction", []string{"3.5/40"}, 0, false},
		{"two slashes", []string{"3/40/50"}, 0, false},
		{"too many digits", []string{"1/" + strings.Repeat("9", 19)}, 0, false},
		{"twice", []string{"3/40", "4/40"}, 0, false},
		{"empty value", []string{""}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room, ok := bucketRoom(http.Header{roomField: tt.value})
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.room, room)
		})
	}
	_, ok := bucketRoom(http.Header{})
	assert.False(t, ok, "no field")
}

// FuzzBucketRoom: any value reads as a room of at least 0 that is no more
// than its size, or is not read; what is read, markHeader marks.
func FuzzBucketRoom(f *testing.F) {
	for _, s := range []string{"32/40", "40/40", "0/400", " 3 / 80 ", "41/40", "0/0", "3.5/40", "-1/40", "1/999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{roomField: {v}}
		room, ok := bucketRoom(h)
		if !ok {
			if room != 0 {
				t.Fatalf("%q: not read, yet a room of %d", v, room)
			}
			return
		}
		_, size, _ := strings.Cut(v, "/")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 10, 64)
		if err != nil || room < 0 || room > n {
			t.Fatalf("%q read as a room of %d", v, room)
		}
		if markHeader(h)&markRoom == 0 {
			t.Fatalf("%q read, but not marked", v)
		}
	})
}

// TestAnswerCarriesBucketRoom: an answer's leaky bucket fill reaches the
// limiter as the room it leaves, whatever the gate keeps; an answer
// without one, with one that is not read, or served by a cache (an Age:
// its fill is as stale as its quota), carries none.
func TestAnswerCarriesBucketRoom(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		room   int64
	}{
		{"a fill", http.Header{roomField: {"30/40"}}, 10},
		{"a full bucket", http.Header{roomField: {"40/40"}}, 0},
		{"none", http.Header{}, -1},
		{"one not read", http.Header{roomField: {"40"}}, -1},
		{"a fill served by a cache", http.Header{roomField: {"0/40"}, "Age": {"30"}}, -1},
		{"a quota served by a cache", http.Header{"X-Ratelimit-Remaining": {"40"}, "X-Ratelimit-Reset": {"1"}, "Age": {"30"}}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c call
			c.room = 7 // the last answer's, to be replaced
			resp := &http.Response{StatusCode: http.StatusOK, Header: tt.header}
			c.done(resp, markHeader(resp.Header), time.Now(), true, true)
			assert.Equal(t, tt.room, c.room)
		})
	}
}
