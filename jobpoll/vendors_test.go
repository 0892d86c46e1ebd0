package jobpoll_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end tests against fake vendor servers on 127.0.0.1 that use each
// vendor's documented job states. Backoffs are short so that they run fast;
// the timing itself is asserted exactly in poller_test.go.

// vendor is a fake job-status endpoint: it answers the states of a script
// in turn, repeating the last, and counts the checks.
type vendor struct {
	mu     sync.Mutex
	states []string
	checks int
	at     []time.Time
}

func (v *vendor) next() (string, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.checks++
	v.at = append(v.at, time.Now())
	return v.states[min(v.checks, len(v.states))-1], v.checks
}

func (v *vendor) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.checks
}

// serve starts h on 127.0.0.1 and returns its URL and a client whose heed
// Transport sends through the server's own transport.
func serve(t *testing.T, h http.Handler) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := heed.New(srv.Client().Transport, heed.WithPolicy(heed.Policy{Name: "status", MaxElapsed: 10 * time.Second}))
	t.Cleanup(tr.CloseIdleConnections)
	return srv.URL, &http.Client{Transport: tr}
}

var quick = heed.Constant(10 * time.Millisecond)

// Stripe report runs: GET /v1/reporting/report_runs/{id}, "status" is
// pending, succeeded or failed; the file is in "result" once succeeded.
func TestStripeReportRun(t *testing.T) {
	poller := &jobpoll.Poller{
		Terminal: []string{"succeeded", "failed"},
		Running:  []string{"pending"},
		Backoff:  quick,
	}
	for _, tc := range []struct {
		name   string
		states []string
		want   string
	}{
		{"succeeded", []string{"pending", "pending", "succeeded"}, "succeeded"},
		{"failed", []string{"pending", "failed"}, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &vendor{states: tc.states}
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/reporting/report_runs/{id}", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer sk_test_123" {
					http.Error(w, `{"error":{"type":"invalid_request_error"}}`, http.StatusUnauthorized)
					return
				}
				s, _ := v.next()
				run := map[string]any{"id": r.PathValue("id"), "object": "reporting.report_run", "status": s, "result": nil, "error": nil}
				switch s {
				case "succeeded":
					run["result"] = map[string]any{"id": "file_1", "object": "file", "url": "https://files.stripe.com/v1/files/file_1/contents"}
				case "failed":
					run["error"] = "No data available for the requested interval."
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(run)
			})
			base, client := serve(t, mux)
			st, err := poller.Poll(t.Context(), "frr_1", &jobpoll.HTTPChecker{
				URL:    base + "/v1/reporting/report_runs/frr_1",
				Field:  "status",
				Header: http.Header{"Authorization": {"Bearer sk_test_123"}},
				Client: client,
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, st.State)
			assert.Equal(t, len(tc.states), v.count())
			if tc.want == "succeeded" {
				p, _ := jobpoll.ParsePath("result.url")
				url, err := p.Lookup(st.Body)
				require.NoError(t, err)
				assert.Equal(t, "https://files.stripe.com/v1/files/file_1/contents", url)
			}
		})
	}
}

// Salesforce Bulk API 2.0 ingest jobs: GET
// /services/data/vXX.X/jobs/ingest/{jobId}, "state" is Open,
// UploadComplete, InProgress, JobComplete, Failed or Aborted.
func TestSalesforceBulkJob(t *testing.T) {
	poller := &jobpoll.Poller{
		Terminal: []string{"JobComplete", "Failed", "Aborted"},
		Running:  []string{"Open", "UploadComplete", "InProgress"},
		Backoff:  quick,
	}
	for _, tc := range []struct {
		name    string
		states  []string
		want    string
		unknown bool
	}{
		{"complete", []string{"UploadComplete", "InProgress", "InProgress", "JobComplete"}, "JobComplete", false},
		{"aborted", []string{"InProgress", "Aborted"}, "Aborted", false},
		{"failed", []string{"UploadComplete", "Failed"}, "Failed", false},
		{"a state Bulk 2.0 does not have", []string{"InProgress", "Queued"}, "Queued", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &vendor{states: tc.states}
			mux := http.NewServeMux()
			mux.HandleFunc("GET /services/data/v62.0/jobs/ingest/{id}", func(w http.ResponseWriter, r *http.Request) {
				s, _ := v.next()
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"id":%q,"operation":"insert","object":"Account","state":%q,"numberRecordsProcessed":1000,"numberRecordsFailed":0}`, r.PathValue("id"), s)
			})
			base, client := serve(t, mux)
			st, err := poller.Poll(t.Context(), "7505fEXAMPLE4C2AAK", &jobpoll.HTTPChecker{
				URL:    base + "/services/data/v62.0/jobs/ingest/7505fEXAMPLE4C2AAK",
				Field:  "state",
				Client: client,
			})
			assert.Equal(t, tc.want, st.State)
			assert.Equal(t, len(tc.states), v.count())
			if tc.unknown {
				var ue *jobpoll.UnknownStateError
				require.ErrorAs(t, err, &ue)
				assert.Equal(t, "Queued", ue.State)
				return
			}
			require.NoError(t, err)
		})
	}
}

// Azure long-running operations: the response that starts one carries
// Azure-AsyncOperation (or Operation-Location) and Retry-After; the
// operation's "status" is NotStarted, Running, Succeeded, Failed or
// Canceled, and each status response may carry Retry-After again.
func TestAzureLongRunningOperation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		header   string // the header that names the status monitor
		wait     string // Retry-After of the create response
		states   []string
		want     string
		errField string // "error.code" when failed
	}{
		{"succeeded", "Azure-AsyncOperation", "1", []string{"NotStarted", "Running", "Succeeded"}, "Succeeded", ""},
		{"failed", "Operation-Location", "", []string{"Running", "Failed"}, "Failed", "ResourceQuotaExceeded"},
		{"canceled", "Azure-AsyncOperation", "", []string{"Canceled"}, "Canceled", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &vendor{states: tc.states}
			mux := http.NewServeMux()
			mux.HandleFunc("PUT /subscriptions/sub-1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set(tc.header, "/subscriptions/sub-1/providers/Microsoft.Compute/locations/westus/operations/op-1?api-version=2024-07-01")
				if tc.wait != "" {
					w.Header().Set("Retry-After", tc.wait)
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprint(w, `{"name":"vm1","properties":{"provisioningState":"Creating"}}`)
			})
			mux.HandleFunc("GET /subscriptions/sub-1/providers/Microsoft.Compute/locations/westus/operations/op-1", func(w http.ResponseWriter, r *http.Request) {
				s, _ := v.next()
				w.Header().Set("Content-Type", "application/json")
				body := map[string]any{"id": r.URL.Path, "name": "op-1", "status": s, "startTime": "2025-01-02T03:04:05Z"}
				if s == "Failed" {
					body["error"] = map[string]any{"code": tc.errField, "message": "Operation could not be completed as it results in exceeding approved quota."}
				}
				if s == "NotStarted" || s == "Running" {
					// Azure asks for the next poll; "0" must still wait
					// Poller.MinWait, never less.
					w.Header().Set("Retry-After", "0")
				}
				_ = json.NewEncoder(w).Encode(body)
			})
			base, client := serve(t, mux)

			req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, base+"/subscriptions/sub-1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1?api-version=2024-07-01", strings.NewReader(`{"location":"westus"}`))
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusCreated, resp.StatusCode)
			opURL, ok := jobpoll.OperationURL(resp)
			require.True(t, ok)
			assert.Equal(t, "api-version=2024-07-01", opURL.RawQuery)
			var first time.Time // the first check: at once, or when the create response asks
			if hint, _, ok := heed.Hint(resp, time.Now()); ok {
				first = time.Now().Add(hint)
			}

			poller := &jobpoll.Poller{
				Terminal: []string{"Succeeded", "Failed", "Canceled"},
				Running:  []string{"NotStarted", "Running"},
				MinWait:  50 * time.Millisecond,
			}
			start := time.Now()
			st, err := poller.PollAt(t.Context(), "op-1", &jobpoll.HTTPChecker{URL: opURL.String(), Field: "status", Client: client}, first)
			require.NoError(t, err)
			assert.Equal(t, tc.want, st.State)
			require.Len(t, v.at, len(tc.states))
			if tc.wait != "" {
				assert.GreaterOrEqual(t, v.at[0].Sub(start), time.Second, "the first check waits for the create response's Retry-After")
			}
			for i := 1; i < len(v.at); i++ {
				assert.GreaterOrEqual(t, v.at[i].Sub(v.at[i-1]), 50*time.Millisecond, "Retry-After: 0 floored to MinWait")
			}
			if tc.errField != "" {
				p, _ := jobpoll.ParsePath("error.code")
				code, err := p.Lookup(st.Body)
				require.NoError(t, err)
				assert.Equal(t, tc.errField, code)
			}
		})
	}
}

// TestHTTPStatusEndpointDown asserts end to end that a status endpoint that
// keeps failing ends the poll with a *CheckError, never a job state.
func TestHTTPStatusEndpointDown(t *testing.T) {
	v := &vendor{states: []string{"running"}}
	base, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, n := v.next(); n > 1 {
			http.Error(w, "upstream unavailable", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, `{"status":"running"}`)
	}))
	srvClient := &http.Client{Transport: heed.New(http.DefaultTransport, heed.WithPolicy(heed.Policy{MaxAttempts: 2, Backoff: quick}))}
	t.Cleanup(srvClient.CloseIdleConnections)
	poller := &jobpoll.Poller{Terminal: terminal, Backoff: quick}
	st, err := poller.Poll(t.Context(), "job-9", &jobpoll.HTTPChecker{URL: base + "/jobs/job-9", Field: "status", Client: srvClient})
	var he *jobpoll.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusInternalServerError, he.StatusCode)
	assert.Equal(t, "running", st.State)
	assert.Equal(t, 3, v.count(), "one good check, then two attempts of the failing one")
}

func TestOperationURL(t *testing.T) {
	req := httptest.NewRequest(http.MethodPut, "https://management.azure.com/subscriptions/s/x?api-version=1", nil)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   string
	}{
		{"absolute", http.Header{"Azure-Asyncoperation": {"https://management.azure.com/op/1?api-version=1"}}, "https://management.azure.com/op/1?api-version=1"},
		{"relative", http.Header{"Operation-Location": {"/op/2"}}, "https://management.azure.com/op/2"},
		{"Azure-AsyncOperation first", http.Header{"Operation-Location": {"/b"}, "Azure-Asyncoperation": {"/a"}}, "https://management.azure.com/a"},
		{"none", http.Header{"Location": {"/elsewhere"}}, ""},
		{"unparsable", http.Header{"Operation-Location": {"http://[::1"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok := jobpoll.OperationURL(&http.Response{Header: tc.header, Request: req})
			if tc.want == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.want, u.String())
		})
	}
	_, ok := jobpoll.OperationURL(nil)
	assert.False(t, ok)
}
