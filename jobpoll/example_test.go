package jobpoll_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
)

// A job that is pending twice, then succeeded: Poll returns the terminal
// state and the body, from which the caller reads the result.
func ExamplePoller_Poll() {
	var checks atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if checks.Add(1) < 3 {
			fmt.Fprint(w, `{"id":"frr_1","status":"pending"}`)
			return
		}
		fmt.Fprint(w, `{"id":"frr_1","status":"succeeded","result":{"url":"https://files.example.com/frr_1.csv"}}`)
	}))
	defer srv.Close()
	// The status checks get a heed Transport of their own: a 429 or 503
	// from the status endpoint is waited out within 30s per check, apart
	// from the job's deadline.
	client := &http.Client{Transport: heed.New(srv.Client().Transport,
		heed.WithPolicy(heed.Policy{Name: "report status", MaxElapsed: 30 * time.Second}))}
	defer client.CloseIdleConnections()

	poller := &jobpoll.Poller{
		Terminal: []string{"succeeded", "failed"},
		Running:  []string{"pending"},
		Deadline: 10 * time.Minute,
		Backoff:  heed.Constant(10 * time.Millisecond), // the default is heed.EqualJitter(1s, 30s)
	}
	st, err := poller.Poll(context.Background(), "frr_1", &jobpoll.HTTPChecker{
		URL:    srv.URL + "/v1/reporting/report_runs/frr_1",
		Field:  "status",
		Header: http.Header{"Authorization": {"Bearer sk_test_123"}},
		Client: client,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	result, _ := jobpoll.ParsePath("result.url")
	url, _ := result.Lookup(st.Body)
	fmt.Println(st.State, "after", checks.Load(), "checks:", url)
	// Output: succeeded after 3 checks: https://files.example.com/frr_1.csv
}

// A job that needs longer than this run may wait: Poll returns at once, and
// RetryAt says when to come back, whether the job's deadline stopped the
// poll (*jobpoll.TimeoutError) or the status check's transport deferred
// (*heed.DeferredError).
func ExampleRetryAt() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "600")
		fmt.Fprint(w, `{"status":"rendering"}`)
	}))
	defer srv.Close()
	client := &http.Client{Transport: heed.New(srv.Client().Transport)}
	defer client.CloseIdleConnections()

	poller := &jobpoll.Poller{Terminal: []string{"done", "error"}, Deadline: time.Minute}
	_, err := poller.Poll(context.Background(), "job-42", &jobpoll.HTTPChecker{URL: srv.URL, Field: "status", Client: client})

	var te *jobpoll.TimeoutError
	if errors.As(err, &te) {
		fmt.Printf("job %s still %s after %d check\n", te.JobID, te.LastState, te.Checks)
	}
	if at, ok := jobpoll.RetryAt(err); ok {
		// Persist the job with at, and let a later run claim it.
		fmt.Println("come back in", time.Until(at).Round(time.Minute))
	}
	// Output:
	// job job-42 still rendering after 1 check
	// come back in 10m0s
}

func ExampleParsePath() {
	p, err := jobpoll.ParsePath("operations[1].properties.status")
	if err != nil {
		fmt.Println(err)
		return
	}
	state, err := p.Lookup([]byte(`{"operations":[{"properties":{"status":"Succeeded"}},{"properties":{"status":"Running"}}]}`))
	fmt.Println(state, err)
	// Output: Running <nil>
}

// Azure announces a long-running operation's status monitor in a header of
// the response that starts it.
func ExampleOperationURL() {
	req, _ := http.NewRequest(http.MethodPut, "https://management.azure.com/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1?api-version=2024-07-01", nil)
	resp := &http.Response{
		StatusCode: http.StatusCreated,
		Header: http.Header{
			"Azure-Asyncoperation": {"https://management.azure.com/subscriptions/s/providers/Microsoft.Compute/locations/westus/operations/op-1?api-version=2024-07-01"},
			"Retry-After":          {"10"},
		},
		Request: req,
	}
	u, _ := jobpoll.OperationURL(resp)
	wait, _, _ := heed.Hint(resp, time.Now())
	fmt.Println(u.Path)
	fmt.Println("first check after", wait)
	// With a Poller whose Terminal is Succeeded, Failed, Canceled:
	//   poller.PollAt(ctx, "op-1", &jobpoll.HTTPChecker{URL: u.String(), Field: "status"}, time.Now().Add(wait))
	// Output:
	// /subscriptions/s/providers/Microsoft.Compute/locations/westus/operations/op-1
	// first check after 10s
}
