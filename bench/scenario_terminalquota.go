package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// terminal-quota: a 429 whose body says insufficient_quota, with no hint,
// then 402 Payment Required. No wait fixes a billing problem: one request
// and an immediate answer are ideal.
func init() {
	register(&Scenario{
		Name:  "terminal-quota",
		Order: 60,
		Rows: []Row{
			{Key: "sent", Label: "terminal-quota: requests sent", Ideal: "1"},
			{Key: "time", Label: "terminal-quota: time spent", Ideal: "< 50 ms"},
		},
		Run: func(env *Env, cs []Client) Figures {
			return eachClient(cs, func(c Client, d Doer, f Figures) {
				s := newServer(func(n int, w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					if n == 1 {
						w.WriteHeader(http.StatusTooManyRequests)
						_, _ = w.Write([]byte(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`))
						return
					}
					w.WriteHeader(http.StatusPaymentRequired)
					_, _ = w.Write([]byte(`{"error":{"message":"Payment required","type":"billing"}}`))
				})
				defer s.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				start := time.Now()
				d.Do(&Call{Ctx: ctx, Method: http.MethodPost, URL: s.URL + "/v1/chat/completions", Body: []byte(`{"model":"m"}`),
					Header: map[string]string{"Content-Type": "application/json"}})
				f.set("time", c.Name, dur(time.Since(start)))
				f.set("sent", c.Name, fmt.Sprint(len(s.got())))
			})
		},
	})
}
