package heedotel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/heedotel"
)

// quotaBody is OpenAI's answer when the account is out of credit.
const quotaBody = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`

func TestObserverScenarios(t *testing.T) {
	tests := []struct {
		name     string
		policy   heed.Policy
		method   string
		deadline time.Duration
		replies  []reply
		// what RoundTrip returns
		wantStatus   int
		wantDeferred bool
		sent         int
		// what the Observer records
		points   []string
		events   []string
		deferred bool
	}{
		{
			name:   "429 waited out",
			method: "GET",
			replies: []reply{
				{status: 429, header: hdr("Retry-After", "2")},
				{status: 200},
			},
			wantStatus: 200, sent: 2,
			points: []string{
				"heed.attempts{heed.class=deliver,heed.reason=ok,heed.route=default,http.request.method=GET,http.response.status_code=200,server.address=api.example} 1",
				"heed.attempts{heed.class=throttled,heed.reason=rate limited,heed.route=default,http.request.method=GET,http.response.status_code=429,server.address=api.example} 1",
				"heed.wait{heed.route=default,heed.wait.source=Retry-After,http.request.method=GET,server.address=api.example} count=1 sum=2",
			},
			events: []string{
				"heed.wait{heed.attempt=1,heed.reason=rate limited,heed.retry_at=2000-01-01T00:00:02Z,heed.wait.seconds=2,heed.wait.source=Retry-After,http.response.status_code=429}",
			},
		},
		{
			name:         "deferral",
			method:       "GET",
			deadline:     5 * time.Second,
			replies:      []reply{{status: 429, header: hdr("Retry-After", "120")}},
			wantDeferred: true, sent: 1,
			points: []string{
				"heed.attempts{heed.class=throttled,heed.reason=rate limited,heed.route=default,http.request.method=GET,http.response.status_code=429,server.address=api.example} 1",
				"heed.deferrals{heed.reason=rate limited,heed.route=default,heed.wait.source=Retry-After,http.request.method=GET,http.response.status_code=429,server.address=api.example} 1",
			},
			events: []string{
				"heed.deferred{heed.attempt=1,heed.left.seconds=5,heed.reason=rate limited,heed.retry_at=2000-01-01T00:02:00Z,heed.wait.seconds=120,heed.wait.source=Retry-After,http.response.status_code=429}",
			},
			deferred: true,
		},
		{
			name:       "terminal quota",
			method:     "POST",
			replies:    []reply{{status: 429, header: hdr("Content-Type", "application/json", "Retry-After", "20"), body: quotaBody}},
			wantStatus: 429, sent: 1,
			points: []string{
				"heed.attempts{heed.class=terminal,heed.reason=billing,heed.route=default,http.request.method=POST,http.response.status_code=429,server.address=api.example} 1",
			},
			events: []string{
				"heed.terminal{heed.attempt=1,heed.reason=billing,http.response.status_code=429}",
			},
		},
		{
			name:   "budget refusal",
			policy: heed.Policy{Budget: heed.Budget{Ratio: -1, MinPerSecond: -1}},
			method: "GET",
			replies: []reply{
				{status: 503, header: hdr("Retry-After", "1")},
				{status: 200},
			},
			wantStatus: 503, sent: 1,
			points: []string{
				"heed.attempts{heed.class=throttled,heed.reason=unavailable,heed.route=default,http.request.method=GET,http.response.status_code=503,server.address=api.example} 1",
				"heed.giveups{heed.reason=retry budget,heed.route=default,heed.stop=retry budget,http.request.method=GET,http.response.status_code=503,server.address=api.example} 1",
			},
			events: []string{
				"heed.give_up{heed.attempt=1,heed.reason=retry budget,heed.stop=retry budget,http.response.status_code=503}",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTelemetry(t)
				rt := script(tt.replies...)
				tr := heed.New(rt, heed.WithPolicy(tt.policy), heed.WithObserver(tm.obs.Observe))

				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				ctx, span := tm.tracer.Start(ctx, "caller")
				req, err := http.NewRequestWithContext(ctx, tt.method, "https://api.example:443/v1/things?key=s3cret", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				span.End()

				if tt.wantDeferred {
					var de *heed.DeferredError
					require.True(t, errors.As(err, &de), "got %v", err)
				} else {
					require.NoError(t, err)
					assert.Equal(t, tt.wantStatus, resp.StatusCode)
					resp.Body.Close()
				}
				synctest.Wait()
				assert.Equal(t, tt.sent, rt.requests())

				assert.Equal(t, tt.points, tm.points(t))
				assert.Equal(t, tt.events, tm.spanEvents(t, "caller"))
				caller := tm.span(t, "caller")
				assert.Equal(t, codes.Unset, caller.Status().Code, "a deferral is not an error")
				if tt.deferred {
					assert.Contains(t, caller.Attributes(), heedotel.AttrDeferred.Bool(true))
				} else {
					assert.NotContains(t, caller.Attributes(), heedotel.AttrDeferred.Bool(true))
				}
			})
		})
	}
}

// TestObserverWithoutSpan: a request whose context has no span is counted
// all the same.
func TestObserverWithoutSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTelemetry(t)
		tr := heed.New(script(reply{status: 429, header: hdr("Retry-After", "120")}), heed.WithObserver(tm.obs.Observe))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "https://api.example/", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		require.ErrorIs(t, err, heed.ErrDeferred)
		assert.Equal(t, []string{
			"heed.attempts{heed.class=throttled,heed.reason=rate limited,heed.route=default,http.request.method=GET,http.response.status_code=429,server.address=api.example} 1",
			"heed.deferrals{heed.reason=rate limited,heed.route=default,heed.wait.source=Retry-After,http.request.method=GET,http.response.status_code=429,server.address=api.example} 1",
		}, tm.points(t))
		assert.Empty(t, tm.spans.Ended())
	})
}

// TestObserverTransportError: an attempt without a response carries
// error.type and no status code.
func TestObserverTransportError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTelemetry(t)
		fail := roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("unexpected EOF")
		})
		tr := heed.New(fail, heed.WithObserver(tm.obs.Observe), heed.WithPolicy(heed.Policy{
			MaxAttempts: 1,
			Classify: func(*http.Request, *http.Response, error) heed.Verdict {
				return heed.Verdict{Class: heed.Ambiguous, Reason: "eof"}
			},
		}))
		req, err := http.NewRequestWithContext(t.Context(), "PATCH", "http://[::1]:8080/v1/x", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		require.Error(t, err)
		assert.Equal(t, []string{
			"heed.attempts{error.type=eof,heed.class=ambiguous,heed.reason=eof,heed.route=default,http.request.method=PATCH,server.address=::1} 1",
			"heed.giveups{heed.reason=eof,heed.route=default,heed.stop=attempts used up,http.request.method=PATCH,server.address=::1} 1",
		}, tm.points(t))
	})
}

// TestInstruments: the names, kinds, units and descriptions a backend sees.
func TestInstruments(t *testing.T) {
	tm := newTelemetry(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, kind := range []heed.EventKind{heed.EventAttempt, heed.EventRetry, heed.EventGateWait, heed.EventDeferred, heed.EventGiveUp} {
		tm.obs.Observe(heed.Event{Kind: kind, Context: ctx, Route: "r", Method: "GET", URL: "https://h/", Wait: time.Hour})
	}
	got := map[string]string{}
	var rm metricdata.ResourceMetrics
	require.NoError(t, tm.reader.Collect(ctx, &rm))
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, heedotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			kind := fmt.Sprintf("%T", m.Data)
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && sum.IsMonotonic {
				kind = "counter"
			} else if ok {
				kind = "up-down counter"
			}
			got[m.Name] = kind + " | " + m.Unit + " | " + m.Description
		}
	}
	assert.Equal(t, map[string]string{
		"heed.attempts":     "counter | {attempt} | Attempts sent by heed, by route and outcome.",
		"heed.wait":         "metricdata.Histogram[float64] | s | Waits heed made in process before a retry or at the gate, by source.",
		"heed.deferrals":    "counter | {deferral} | Requests heed deferred: the wait did not fit the remaining time.",
		"heed.gate.waiting": "up-down counter | {request} | Requests waiting at heed's gate for their scope to cool down.",
		"heed.giveups":      "counter | {request} | Retryable failures heed handed over without a retry, by why.",
	}, got)
	cancel() // ends the gate wait
}
