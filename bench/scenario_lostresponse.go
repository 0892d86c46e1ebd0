package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// lost-response: the server reads a POST, applies it, then drops the
// connection without answering; a later attempt gets 200. A client that
// resends a POST it cannot prove unapplied applies it twice. With an
// Idempotency-Key the server applies a key once, so resending is safe.
func init() {
	register(&Scenario{
		Name:  "lost-response",
		Order: 50,
		Rows: []Row{
			{Key: "nokey", Label: "lost-response: times applied, no key", Ideal: "1"},
			{Key: "key", Label: "lost-response: times applied, with Idempotency-Key", Ideal: "1 (then 200)"},
		},
		Run: func(env *Env, cs []Client) Figures {
			return eachClient(cs, func(c Client, d Doer, f Figures) {
				var wg sync.WaitGroup
				for _, key := range []string{"", "9f1c7e0a-5b7d-4f7e-8a53-0c2d1c4e6b11"} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						row := "nokey"
						if key != "" {
							row = "key"
						}
						f.setLocked(row, c.Name, lostResponse(d, key))
					}()
				}
				wg.Wait()
			})
		},
	})
}

// lostResponse sends one POST and tells how many times the server applied
// it, and how the call ended.
func lostResponse(d Doer, key string) string {
	var mu sync.Mutex
	applied := 0
	seen := map[string]bool{}
	s := newServer(func(n int, w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		mu.Lock()
		if k == "" || !seen[k] {
			applied++
			seen[k] = k != ""
		}
		mu.Unlock()
		if n == 1 {
			drop(w)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	r := d.Do(&Call{Ctx: ctx, Method: http.MethodPost, URL: s.URL + "/v1/charges", Body: []byte(`{"amount":100}`), Header: h})
	mu.Lock()
	defer mu.Unlock()
	return fmt.Sprintf("%d (then %s)", applied, outcome(r))
}
