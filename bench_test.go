package heed_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/heed-go/heed"
)

// okRT answers 200 from memory with a shared, empty body: the cost measured
// is the wrapper's alone.
type okRT struct{ resp http.Response }

func (o *okRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp := o.resp
	return &resp, nil
}

func newOKRT() *okRT {
	return &okRT{resp: http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: http.NoBody}}
}

// BenchmarkSuccessPathMemory is the success path against an in-memory
// transport: bare, then wrapped by heed with the default policy, then with
// routes.
func BenchmarkSuccessPathMemory(b *testing.B) {
	inner := newOKRT()
	req, _ := http.NewRequest("GET", "https://api.example/v1/models", nil)
	cases := []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", inner},
		{"heed", heed.New(inner)},
		{"heed-routes", heed.New(inner, heed.WithRoute("/v1/", heed.Policy{}), heed.WithRoute("POST /v1/images/", heed.Policy{}))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.rt.RoundTrip(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSuccessPathLoopback is the success path against a real loopback
// server answering 1 KiB: bare http.Transport against heed around it.
func BenchmarkSuccessPathLoopback(b *testing.B) {
	payload := bytes.Repeat([]byte("x"), 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(payload) }))
	defer srv.Close()
	bare := &http.Transport{MaxIdleConnsPerHost: 16}
	defer bare.CloseIdleConnections()
	cases := []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", bare},
		{"heed", heed.New(bare)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: c.rt}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Get(srv.URL + "/v1/models")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkScopes is the success path as the scopes seen grow: each request
// goes to the next of n hosts in turn, bare against heed, and then every
// goroutine of b.RunParallel to one shared scope. A Transport keeps only
// the scopes that carry state (scope.go), so at a million hosts each
// request meets a scope it forgot.
func BenchmarkScopes(b *testing.B) {
	for _, n := range []int{1, 1000, 1000000} {
		hosts := make([]string, n)
		for i := range hosts {
			hosts[i] = "h" + strconv.Itoa(i) + ".example"
		}
		for _, c := range []struct {
			name string
			rt   http.RoundTripper
		}{{"bare", newOKRT()}, {"heed", heed.New(newOKRT())}} {
			b.Run(fmt.Sprintf("hosts=%d/%s", n, c.name), func(b *testing.B) {
				req, _ := http.NewRequest("GET", "https://h0.example/v1/models", nil)
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					req.URL.Host = hosts[i]
					if i++; i == n {
						i = 0
					}
					resp, err := c.rt.RoundTrip(req)
					if err != nil || resp.StatusCode != 200 {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{{"bare", newOKRT()}, {"heed", heed.New(newOKRT())}} {
		b.Run("parallel-one-scope/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest("GET", "https://api.example/v1/models", nil)
				for pb.Next() {
					resp, err := c.rt.RoundTrip(req)
					if err != nil || resp.StatusCode != 200 {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
