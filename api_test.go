package heed_test

// The public API of package heed, to the letter.

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/heed-go/heed"
)

// The public signatures; this file does not compile if one changes.
var (
	_ func(http.RoundTripper, ...heed.Option) *heed.Transport      = heed.New
	_ func(*heed.Transport, *http.Request) (*http.Response, error) = (*heed.Transport).RoundTrip
	_ func(*heed.Transport)                                        = (*heed.Transport).CloseIdleConnections
	_ http.RoundTripper                                            = (*heed.Transport)(nil)

	_ func(heed.Policy) heed.Option         = heed.WithPolicy
	_ func(string, heed.Policy) heed.Option = heed.WithRoute
	_ func(*zap.Logger) heed.Option         = heed.WithLogger
	_ func(heed.Gate) heed.Option           = heed.WithGate

	_ heed.Backoff                                            = func(retry int) time.Duration { return 0 }
	_ func(first, cap time.Duration) heed.Backoff             = heed.EqualJitter
	_ func(first, cap time.Duration) heed.Backoff             = heed.FullJitter
	_ func(d time.Duration) heed.Backoff                      = heed.Constant
	_ heed.Classifier                                         = heed.DefaultClassifier
	_ func(*http.Request, *http.Response, error) heed.Verdict = heed.DefaultClassifier
	_ func(*http.Response, int) ([]byte, error)               = heed.PeekBody

	_ func(string, time.Time) (time.Duration, bool)                 = heed.ParseRetryAfter
	_ func(*http.Response, time.Time) (time.Duration, string, bool) = heed.Hint

	_ func(*heed.DeferredError) string = (*heed.DeferredError).Error
	_ func(*heed.DeferredError) error  = (*heed.DeferredError).Unwrap
	_ error                            = (*heed.DeferredError)(nil)
	_ error                            = heed.ErrDeferred

	_ func(...heed.GateOption) heed.Gate = heed.NewGate
	_ func(bool) heed.GateOption         = heed.WithInferredQuota
	_ heed.Gate                          = designPlainGate{}
)

type designField struct {
	name string
	typ  reflect.Type
}

// exportedFields returns the exported fields of struct type t, in order.
func exportedFields(t reflect.Type) []designField {
	var f []designField
	for i := range t.NumField() {
		if sf := t.Field(i); sf.IsExported() {
			f = append(f, designField{sf.Name, sf.Type})
		}
	}
	return f
}

func TestDesignPublicAPI(t *testing.T) {
	dur := reflect.TypeFor[time.Duration]()
	str := reflect.TypeFor[string]()
	integer := reflect.TypeFor[int]()

	t.Run("Policy fields, in order", func(t *testing.T) {
		want := []designField{
			{"Name", str},
			{"MaxAttempts", integer},
			{"MaxElapsed", dur},
			{"MaxWait", dur},
			{"MinWait", dur},
			{"Backoff", reflect.TypeFor[heed.Backoff]()},
			{"Jitter", dur},
			{"Reserve", dur},
			{"Classify", reflect.TypeFor[heed.Classifier]()},
			{"Scope", str},
			{"KeyHeader", str},
			{"RetryUnsafe", reflect.TypeFor[bool]()},
		}
		got := exportedFields(reflect.TypeFor[heed.Policy]())
		require.GreaterOrEqual(t, len(got), len(want))
		assert.Equal(t, want, got[:len(want)])
		for _, f := range got[len(want):] {
			t.Logf("Policy has a field beyond the original contract: %s %s", f.name, f.typ)
		}
	})

	t.Run("DeferredError fields, in order", func(t *testing.T) {
		want := []designField{
			{"Method", str}, {"URL", str},
			{"Route", str},
			{"Key", str},
			{"Attempts", integer},
			{"Status", integer},
			{"Reason", str},
			{"Wait", dur},
			{"RetryAt", reflect.TypeFor[time.Time]()},
			{"Left", dur},
			{"Err", reflect.TypeFor[error]()},
		}
		assert.Equal(t, want, exportedFields(reflect.TypeFor[heed.DeferredError]()))
	})

	t.Run("Verdict", func(t *testing.T) {
		assert.Equal(t, []designField{{"Class", reflect.TypeFor[heed.Class]()}, {"Reason", str}, {"Wait", dur}, {"Source", str}},
			exportedFields(reflect.TypeFor[heed.Verdict]()))
	})

	t.Run("Class is a uint8 enumeration in its documented order", func(t *testing.T) {
		assert.Equal(t, reflect.Uint8, reflect.TypeFor[heed.Class]().Kind())
		for i, c := range []heed.Class{heed.Deliver, heed.Terminal, heed.Throttled, heed.Transient, heed.Ambiguous} {
			assert.Equal(t, heed.Class(i), c)
		}
	})

	t.Run("Option has one unexported method", func(t *testing.T) {
		o := reflect.TypeFor[heed.Option]()
		require.Equal(t, reflect.Interface, o.Kind())
		require.Equal(t, 1, o.NumMethod())
		assert.False(t, o.Method(0).IsExported())
	})

	t.Run("Gate has exactly NotBefore and Hold", func(t *testing.T) {
		g := reflect.TypeFor[heed.Gate]()
		require.Equal(t, 2, g.NumMethod())
		nb, ok := g.MethodByName("NotBefore")
		require.True(t, ok)
		assert.Equal(t, reflect.TypeOf(func(context.Context, string) (time.Time, error) { return time.Time{}, nil }), nb.Type)
		hold, ok := g.MethodByName("Hold")
		require.True(t, ok)
		assert.Equal(t, reflect.TypeOf(func(context.Context, string, time.Time) error { return nil }), hold.Type)
	})

	t.Run("Backoff and Classifier are the func types given", func(t *testing.T) {
		assert.True(t, reflect.TypeFor[heed.Backoff]().ConvertibleTo(reflect.TypeFor[func(int) time.Duration]()))
		assert.True(t, reflect.TypeFor[heed.Classifier]().ConvertibleTo(reflect.TypeFor[func(*http.Request, *http.Response, error) heed.Verdict]()))
	})
}
