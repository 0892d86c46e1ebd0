package main

import (
	"context"
	"net/http"
	"time"
)

// zero-hint: Retry-After: 0 five times, then 200. A server that says "now"
// five times running is overloaded; heed's MinWait (1 s by default) keeps a
// client from hammering it.
func init() {
	register(&Scenario{
		Name:  "zero-hint",
		Order: 30,
		Rows: []Row{
			{Key: "gaps", Label: "zero-hint: smallest / median gap", Ideal: "1.00 s / 1.00 s"},
		},
		Run: func(env *Env, cs []Client) Figures {
			return eachClient(cs, func(c Client, d Doer, f Figures) {
				s := newServer(func(n int, w http.ResponseWriter, _ *http.Request) {
					if n <= 5 {
						w.Header().Set("Retry-After", "0")
						w.WriteHeader(http.StatusTooManyRequests)
						return
					}
					w.WriteHeader(http.StatusOK)
				})
				defer s.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				d.Do(&Call{Ctx: ctx, Method: http.MethodGet, URL: s.URL + "/v1/report"})
				g := s.gaps()
				if len(g) == 0 {
					f.set("gaps", c.Name, "no retry")
					return
				}
				f.set("gaps", c.Name, dur(smallest(g))+" / "+dur(median(g)))
			})
		},
	})
}
