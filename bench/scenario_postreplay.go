package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// post-replay: a 1 MiB POST answered 503 twice, then 200. Each attempt must
// carry the whole body, byte for byte.
func init() {
	register(&Scenario{
		Name:  "post-replay",
		Order: 40,
		Rows: []Row{
			{Key: "intact", Label: "post-replay: 1 MiB bodies arrived intact (sha256)", Ideal: "3 of 3"},
		},
		Run: func(env *Env, cs []Client) Figures {
			body := make([]byte, 1<<20)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range body {
				body[i] = byte(rng.Uint32())
			}
			want := sha256.Sum256(body)
			return eachClient(cs, func(c Client, d Doer, f Figures) {
				s := newServer(func(n int, w http.ResponseWriter, _ *http.Request) {
					if n <= 2 {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					w.WriteHeader(http.StatusOK)
				})
				defer s.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				d.Do(&Call{Ctx: ctx, Method: http.MethodPost, URL: s.URL + "/v1/files", Body: body,
					Header: map[string]string{"Content-Type": "application/octet-stream"}})
				h := s.got()
				ok := 0
				for _, x := range h {
					if x.Sum == want {
						ok++
					}
				}
				f.set("intact", c.Name, fmt.Sprintf("%d of %d", ok, len(h)))
			})
		},
	})
}
