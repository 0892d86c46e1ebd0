package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// deadline: the server always answers 429 with Retry-After: 120, and the
// caller has 2 s. A client that cannot wait 120 s should say so at once,
// with the time the work may be tried again.
func init() {
	register(&Scenario{
		Name:  "deadline",
		Order: 10,
		Rows: []Row{
			{Key: "time", Label: "deadline: time until the call returns", Ideal: "< 50 ms"},
			{Key: "error", Label: "deadline: error returned", Ideal: "typed, with RetryAt"},
			{Key: "sent", Label: "deadline: requests sent", Ideal: "1"},
		},
		Run: func(env *Env, cs []Client) Figures {
			return eachClient(cs, func(c Client, d Doer, f Figures) {
				s := newServer(func(_ int, w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Retry-After", "120")
					w.WriteHeader(http.StatusTooManyRequests)
				})
				defer s.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				start := time.Now()
				r := d.Do(&Call{Ctx: ctx, Method: http.MethodGet, URL: s.URL + "/v1/report"})
				f.set("time", c.Name, dur(time.Since(start)))
				f.set("error", c.Name, describe(r, start))
				f.set("sent", c.Name, fmt.Sprint(len(s.got())))
			})
		},
	})
}
