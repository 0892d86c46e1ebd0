package heedotel_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

const waitingPoint = "heed.gate.waiting{heed.route=default,http.request.method=GET,server.address=api.example} "

func TestGateWaiting(t *testing.T) {
	tests := []struct {
		name string
		// ctxs gives each request the index of its context: requests with
		// the same index share one.
		ctxs []int
		// cancel is the index of the context canceled during the wait, or -1.
		cancel int
		// the value of heed.gate.waiting while all wait, after the cancel,
		// and once every RoundTrip has returned
		waiting, afterCancel, after int64
		sent                        int
	}{
		{name: "wait runs out", ctxs: []int{0}, cancel: -1, waiting: 1, afterCancel: 1, after: 0, sent: 1},
		{name: "context canceled during the wait", ctxs: []int{0}, cancel: 0, waiting: 1, afterCancel: 0, after: 0, sent: 0},
		{name: "two requests share a context", ctxs: []int{0, 0}, cancel: -1, waiting: 2, afterCancel: 2, after: 0, sent: 2},
		{name: "shared context canceled", ctxs: []int{0, 0, 1}, cancel: 0, waiting: 3, afterCancel: 1, after: 0, sent: 1},
		{name: "lone context canceled beside a shared one", ctxs: []int{0, 0, 1}, cancel: 1, waiting: 3, afterCancel: 2, after: 0, sent: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTelemetry(t)
				gate := heed.NewGate()
				require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(3*time.Second)))
				rt := script(reply{status: 200})
				tr := heed.New(rt, heed.WithGate(gate), heed.WithObserver(tm.obs.Observe))

				var ctxs []context.Context
				var cancels []context.CancelFunc
				for range 2 {
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					ctxs, cancels = append(ctxs, ctx), append(cancels, cancel)
				}
				done := make(chan error, len(tt.ctxs))
				for _, i := range tt.ctxs {
					req, err := http.NewRequestWithContext(ctxs[i], "GET", "https://api.example/v1/x", nil)
					require.NoError(t, err)
					go func() {
						resp, err := tr.RoundTrip(req)
						if err == nil {
							resp.Body.Close()
						}
						done <- err
					}()
				}
				synctest.Wait()
				assert.Contains(t, tm.points(t), waitingPoint+itoa(tt.waiting), "while waiting")
				if tt.cancel >= 0 {
					cancels[tt.cancel]()
					synctest.Wait()
				}
				assert.Contains(t, tm.points(t), waitingPoint+itoa(tt.afterCancel), "after the cancel")
				for range tt.ctxs {
					<-done
				}
				synctest.Wait()
				assert.Contains(t, tm.points(t), waitingPoint+itoa(tt.after), "after")
				assert.Equal(t, tt.sent, rt.requests())
			})
		})
	}
}

// TestGateWaitRecorded: a gate wait is a heed.wait of source "gate", on
// the histogram and on the caller's span.
func TestGateWaitRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTelemetry(t)
		gate := heed.NewGate()
		require.NoError(t, gate.Hold(t.Context(), "api.example", time.Now().Add(3*time.Second)))
		tr := heed.New(script(reply{status: 200}), heed.WithGate(gate), heed.WithObserver(tm.obs.Observe))
		ctx, span := tm.tracer.Start(t.Context(), "caller")
		req, err := http.NewRequestWithContext(ctx, "GET", "https://api.example/v1/x", nil)
		require.NoError(t, err)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		waited := time.Since(start)
		span.End()
		synctest.Wait()

		// heed spreads a gate's waiters by up to 1/50 of the wait (20ms
		// at most): the wait is 3s and a little.
		assert.GreaterOrEqual(t, waited, 3*time.Second)
		assert.LessOrEqual(t, waited, 3*time.Second+20*time.Millisecond)
		assert.Equal(t, []string{
			"heed.attempts{heed.class=deliver,heed.reason=ok,heed.route=default,http.request.method=GET,http.response.status_code=200,server.address=api.example} 1",
			waitingPoint + "0",
			"heed.wait{heed.route=default,heed.wait.source=gate,http.request.method=GET,server.address=api.example} count=1 sum=" + seconds(waited),
		}, tm.points(t))

		events := tm.span(t, "caller").Events()
		require.Len(t, events, 1)
		assert.Equal(t, "heed.wait", events[0].Name)
		assert.Equal(t,
			"heed.attempt=1,heed.reason=cooling down,heed.retry_at="+start.Add(waited).UTC().Format(time.RFC3339Nano)+
				",heed.wait.seconds="+seconds(waited)+",heed.wait.source=gate",
			encodeKVs(events[0].Attributes))
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// seconds formats d as the attribute encoder and the tests' %g do.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }
