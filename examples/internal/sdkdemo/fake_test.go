package sdkdemo

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPick(t *testing.T) {
	script := []string{"a", "b"}
	for n, want := range map[int]string{1: "a", 2: "b", 3: "b", 10: "b"} {
		assert.Equal(t, want, Pick(script, n, "empty"), "request %d", n)
	}
	assert.Equal(t, "empty", Pick(nil, 1, "empty"))
}

// echoFake answers POST /echo with its script, recording each request's
// X-N header.
type echoFake struct {
	Fake[string]
	script []string
}

func TestFakeRoutesRecordsAndAnswers(t *testing.T) {
	f := &echoFake{script: []string{"one", "two"}}
	f.Serve(Route(http.MethodPost, "/echo", func(w http.ResponseWriter, r *http.Request) {
		n := f.Arrive(r.Header.Get("X-N"))
		w.Header().Set("X-Vendor", "default")
		Answer(w, http.StatusAccepted, map[string]string{"X-Vendor": "override", "X-Count": strconv.Itoa(n)}, Pick(f.script, n, ""))
	}))
	defer f.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	send := func(method, path, n string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, f.URL()+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-N", n)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(body)
	}

	resp, _ := send(http.MethodGet, "/echo", "x")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "another method is not routed")
	resp, _ = send(http.MethodPost, "/other", "x")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "another path is not routed")

	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { send(http.MethodPost, "/echo", strconv.Itoa(i)) })
	}
	wg.Wait()
	resp, body := send(http.MethodPost, "/echo", "last")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "two", body, "the script's last reply repeats")
	assert.Equal(t, "override", resp.Header.Get("X-Vendor"))
	assert.Equal(t, "4", resp.Header.Get("X-Count"))
	got := f.Arrivals()
	require.Len(t, got, 4, "only routed requests are recorded")
	assert.ElementsMatch(t, []string{"0", "1", "2"}, got[:3])
	assert.Equal(t, "last", got[3])
	got[0] = "changed"
	assert.NotEqual(t, "changed", f.Arrivals()[0], "Arrivals returns a copy")
}

func TestHTTPClientClosesItsOwnConnections(t *testing.T) {
	f := &echoFake{}
	f.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.Arrive(r.RemoteAddr)
	}))
	defer f.Close()
	hc := HTTPClient()
	for range 2 {
		resp, err := hc.Get(f.URL())
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	hc.CloseIdleConnections()
	resp, err := hc.Get(f.URL())
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	hc.CloseIdleConnections()

	got := f.Arrivals()
	require.Len(t, got, 3)
	assert.Equal(t, got[0], got[1], "the connection is kept between calls")
	assert.NotEqual(t, got[1], got[2], "CloseIdleConnections reaches heed's base transport")
}
