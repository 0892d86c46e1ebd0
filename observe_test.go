package heed_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

// recorder keeps the events an observer sees.
type recorder struct {
	mu     sync.Mutex
	events []heed.Event
}

func (r *recorder) observe(e heed.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds() []heed.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var k []heed.EventKind
	for _, e := range r.events {
		k = append(k, e.Kind)
	}
	return k
}

func TestObserverSeesEveryDecision(t *testing.T) {
	tests := []struct {
		name     string
		policy   heed.Policy
		method   string
		deadline time.Duration
		hold     time.Duration
		replies  []reply
		kinds    []heed.EventKind
	}{
		{"delivered", heed.Policy{}, "GET", 0, 0, []reply{ok200}, []heed.EventKind{heed.EventAttempt, heed.EventDelivered}},
		{"retry then delivered", heed.Policy{}, "GET", 0, 0, []reply{tooMany("Retry-After", "2"), ok200},
			[]heed.EventKind{heed.EventAttempt, heed.EventRetry, heed.EventAttempt, heed.EventDelivered}},
		{"deferred", heed.Policy{}, "GET", 5 * time.Second, 0, []reply{tooMany("Retry-After", "120")}, []heed.EventKind{heed.EventAttempt, heed.EventDeferred}},
		{"give up", heed.Policy{}, "POST", 0, 0, []reply{boom500}, []heed.EventKind{heed.EventAttempt, heed.EventGiveUp}},
		{"budget", heed.Policy{Budget: heed.Budget{Ratio: -1, MinPerSecond: -1}}, "GET", 0, 0, []reply{boom500}, []heed.EventKind{heed.EventAttempt, heed.EventBudget}},
		{"gate wait", heed.Policy{}, "GET", 0, 3 * time.Second, []reply{ok200}, []heed.EventKind{heed.EventGateWait, heed.EventAttempt, heed.EventDelivered}},
		{"gate defers", heed.Policy{}, "GET", time.Second, 3 * time.Second, []reply{ok200}, []heed.EventKind{heed.EventDeferred}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec recorder
				gate := heed.NewGate()
				if tt.hold > 0 {
					require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(tt.hold)))
				}
				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				tr := heed.New(script(tt.replies...), heed.WithObserver(rec.observe), heed.WithGate(gate), heed.WithPolicy(exact(tt.policy)))
				resp, _ := tr.RoundTrip(newRequest(t, ctx, tt.method, "https://api.example/v1/x?token=s3cret", nil))
				if resp != nil {
					resp.Body.Close()
				}
				assert.Equal(t, tt.kinds, rec.kinds())
				last := rec.events[len(rec.events)-1]
				switch last.Kind {
				case heed.EventGiveUp:
					assert.Equal(t, "not replay-safe", last.Stop)
				case heed.EventBudget:
					assert.Equal(t, "retry budget", last.Reason)
				}
				for _, e := range rec.events {
					assert.Equal(t, "https://api.example/v1/x", e.URL)
					assert.Equal(t, "default", e.Route)
					assert.Equal(t, tt.method, e.Method)
					assert.NotNil(t, e.Context)
				}
			})
		})
	}
}

func TestObserverEventFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		tr := heed.New(script(tooMany("Retry-After", "2"), ok200), heed.WithObserver(rec.observe))
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, rec.events, 4)
		first, retry := rec.events[0], rec.events[1]
		assert.Equal(t, heed.EventAttempt, first.Kind)
		assert.Equal(t, 1, first.Attempt)
		assert.Equal(t, 429, first.Status)
		assert.Equal(t, heed.Throttled, first.Class)
		assert.Equal(t, "rate limited", first.Reason)
		assert.Equal(t, heed.EventRetry, retry.Kind)
		assert.Equal(t, 2*time.Second, retry.Wait)
		assert.Equal(t, "Retry-After", retry.Source)
		assert.Equal(t, start.Add(2*time.Second), retry.RetryAt)
		assert.Equal(t, 200, rec.events[3].Status)
		assert.Equal(t, heed.Deliver, rec.events[3].Class)
	})
}

func TestNoObserverNoAllocation(t *testing.T) {
	// The inner transport returns one response over and over: it allocates
	// nothing, so whatever is counted is heed's.
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: http.NoBody}
	tr := heed.New(roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil }))
	req, _ := http.NewRequest("GET", "https://api.example/v1/models", nil)
	allocs := testing.AllocsPerRun(200, func() { _, _ = tr.RoundTrip(req) })
	assert.Zero(t, allocs, "the success path allocates nothing of its own")
}
