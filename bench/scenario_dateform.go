package main

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// date-form: a 429 whose Retry-After is an HTTP-date 3 s ahead, then 200.
// RFC 9110 requires recipients to accept the IMF-fixdate and the obsolete
// RFC 850 form alike. The server answers on a whole second, so the date is
// exactly 3 s ahead of the answer.
func init() {
	forms := []struct{ key, layout string }{
		{"imf", http.TimeFormat},
		{"rfc850", "Monday, 02-Jan-06 15:04:05 GMT"},
	}
	register(&Scenario{
		Name:  "date-form",
		Order: 20,
		Rows: []Row{
			{Key: "imf", Label: "date-form: gap after an IMF-fixdate 3 s ahead", Ideal: "3.00 s"},
			{Key: "rfc850", Label: "date-form: gap after an RFC 850 date 3 s ahead", Ideal: "3.00 s"},
		},
		Run: func(env *Env, cs []Client) Figures {
			return eachClient(cs, func(c Client, d Doer, f Figures) {
				var wg sync.WaitGroup
				for _, form := range forms {
					wg.Add(1)
					go func() {
						defer wg.Done()
						f.setLocked(form.key, c.Name, dateGap(d, form.layout))
					}()
				}
				wg.Wait()
			})
		},
	})
}

// dateGap measures the time from the 429 to the next request.
func dateGap(d Doer, layout string) string {
	var mu sync.Mutex
	var answered time.Time
	s := newServer(func(n int, w http.ResponseWriter, _ *http.Request) {
		if n > 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		now := time.Now()
		on := now.Truncate(time.Second).Add(time.Second)
		time.Sleep(on.Sub(now)) // answer on a whole second
		w.Header().Set("Retry-After", on.Add(3*time.Second).UTC().Format(layout))
		w.WriteHeader(http.StatusTooManyRequests)
		w.(http.Flusher).Flush()
		mu.Lock()
		answered = time.Now()
		mu.Unlock()
	})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d.Do(&Call{Ctx: ctx, Method: http.MethodGet, URL: s.URL + "/v1/report"})
	h := s.got()
	if len(h) < 2 {
		return "no retry"
	}
	mu.Lock()
	defer mu.Unlock()
	return dur(h[1].At.Sub(answered))
}
