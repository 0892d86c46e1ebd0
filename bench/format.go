package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/heed-go/heed"
)

// dur formats a duration for the table: milliseconds below a second,
// seconds with two decimals above.
func dur(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// median returns the median of ds (the lower one of an even count).
func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
}

// smallest returns the least of ds.
func smallest(ds []time.Duration) time.Duration {
	m := time.Duration(math.MaxInt64)
	for _, d := range ds {
		m = min(m, d)
	}
	return m
}

// describe names what a caller got back: the typed error a program could
// act on, or the response when there was no error.
func describe(r Result, start time.Time) string {
	err := r.Err
	var d *heed.DeferredError
	var ex retrypolicy.ExceededError
	switch {
	case err == nil:
		return fmt.Sprintf("none (%d returned)", r.Status)
	case errors.As(err, &d):
		return fmt.Sprintf("`*heed.DeferredError`, RetryAt +%.0f s", d.RetryAt.Sub(start).Seconds())
	case errors.Is(err, context.DeadlineExceeded):
		return "`context.DeadlineExceeded`"
	case errors.Is(err, context.Canceled):
		return "`context.Canceled`"
	case errors.As(err, &ex):
		return "`retrypolicy.ExceededError`"
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if next := errors.Unwrap(e); next == nil {
			return "`" + reflect.TypeOf(e).String() + "`: " + shorten(e.Error())
		}
	}
	return shorten(err.Error())
}

// outcome is "200" or "error", for rows that tell how a call ended.
func outcome(r Result) string {
	if r.Err != nil {
		return "error"
	}
	return fmt.Sprint(r.Status)
}

// errLeaf returns the last part of an error message, after its last
// "op: " prefix: the cause without the paths and URLs before it.
func errLeaf(msg string) string {
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		return msg[i+2:]
	}
	return msg
}

func shorten(s string) string {
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// mib formats a size in KiB as MiB.
func mib(kib int64) string { return fmt.Sprintf("%d MiB", (kib+512)/1024) }
