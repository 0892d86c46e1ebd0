package main

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// The zoo's tests check what must hold for every client whatever its
// speed: every request of the herd is accounted for, the server's own
// count of what it served matches what the clients were served, and each
// ideal is what its limiter's parameters give. They assert no time bound:
// the figures are logged.

// zooHasNginx says whether nginx is installed; without it, a test leaves
// the zoo-nginx scenarios out, or fails when HEED_REQUIRE_NGINX=1 (as CI
// sets it).
func zooHasNginx(t *testing.T) bool {
	t.Helper()
	if _, err := findNginx(); err != nil {
		if os.Getenv("HEED_REQUIRE_NGINX") == "1" {
			t.Fatal("nginx not installed; HEED_REQUIRE_NGINX=1 makes that a failure")
		}
		t.Log("nginx not installed (apt-get install nginx): its scenarios are not run")
		return false
	}
	return true
}

// cutByCap counts a run's requests that ended in the cap's deadline while
// in flight: the server may have served one just as its client gave up.
func cutByCap(r zooRun) int64 {
	var n int64
	for k, v := range r.why {
		if strings.Contains(k, "DeadlineExceeded") || strings.Contains(k, "deadline exceeded") {
			n += int64(v)
		}
	}
	return n
}

// TestZooAccountsForEveryRequest runs each zoo scenario's quick set (100
// GETs from 16 goroutines) for every client, all side by side, each
// against its own server and within zooQuickCap (about 20 s in all).
func TestZooAccountsForEveryRequest(t *testing.T) {
	nginx := zooHasNginx(t)
	type job struct {
		z   *zooScenario
		set zooSet
		c   Client
		run zooRun
	}
	var jobs []*job
	for _, z := range zooScenarios {
		if strings.HasPrefix(z.name, "zoo-nginx") && !nginx {
			continue
		}
		for _, c := range clients {
			jobs = append(jobs, &job{z: z, set: z.runSets(true)[0], c: c})
		}
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { j.run = zooOnce(j.set, j.c, zooQuickCap) })
	}
	wg.Wait()
	for _, j := range jobs {
		t.Run(j.z.name+"/"+j.c.Name, func(t *testing.T) {
			r, total := j.run, j.set.total
			require.NoError(t, r.err)
			t.Logf("%s (%s), %s: %s, ideal %s (%.2f×), %d received, %d served, %d refused, %d failed %v",
				j.z.name, j.set.limit, j.c.Name, dur(r.wall), dur(r.ideal), float64(r.wall)/float64(max(r.ideal, time.Millisecond)),
				r.received, r.served, r.refused, r.failed, r.why)
			assert.Equal(t, total, r.ok+r.failed, "every request ends in a 200 or a failure")
			cut := cutByCap(r)
			assert.GreaterOrEqual(t, r.served, int64(r.ok), "the server served every 200 the client got")
			assert.LessOrEqual(t, r.served, int64(r.ok)+cut, "the server served no more than the client got, but for requests the cap cut off")
			assert.LessOrEqual(t, r.served+int64(r.failed), int64(total)+cut, "served + failed = the herd's requests")
			assert.GreaterOrEqual(t, r.received, r.served+r.refused)
			assert.Positive(t, r.served)
			if j.c.Name == "bare" { // one send per request, every refusal handed back
				assert.Equal(t, int64(total), r.received)
				assert.Equal(t, int64(r.failed), r.refused)
			}
			assert.Positive(t, r.ideal)
		})
	}
}

// TestZooIdealsFollowFromTheParameters works each set's ideal out a second
// way: a client that sends every request at the first instant the
// limiter's own rule admits it, on a virtual clock.
func TestZooIdealsFollowFromTheParameters(t *testing.T) {
	for _, z := range zooScenarios {
		for _, set := range append(z.sets, z.runSets(true)...) {
			for _, lead := range []time.Duration{zooLead, 0, 730 * time.Millisecond, 2*time.Second + 10*time.Millisecond} {
				got, note := set.limit.ideal(lead, set.total)
				var want, tol time.Duration
				switch l := set.limit.(type) {
				case nginxLimit:
					want = greedyNginx(l, set.total)
				case bucketLimit:
					want, tol = greedyBucket(l, set.total), time.Microsecond
				case concurrencyLimit:
					want = greedyConcurrency(l, set.total)
				case httprateLimit:
					want, tol = greedyHTTPRate(l, lead, set.total), 2*httprateStep
				default:
					t.Fatalf("%s: no model for %T", z.name, set.limit)
				}
				assert.InDelta(t, want, got, float64(tol), "%s (%s), %d GETs, lead %s: %s", z.name, set.limit, set.total, lead, note)
			}
		}
	}
	// The closed forms the README gives.
	for _, c := range []struct {
		l     zooLimit
		total int
		want  time.Duration
	}{
		{nginxLimit{rate: 50, burst: 10}, 300, 5780 * time.Millisecond},
		{bucketLimit{rate: 100, burst: 10}, 300, 2900 * time.Millisecond},
		{concurrencyLimit{n: 4, d: 50 * time.Millisecond}, 200, 2500 * time.Millisecond},
		{concurrencyLimit{n: 8, d: 50 * time.Millisecond}, 300, 1900 * time.Millisecond},
		{httprateLimit{limit: 40, window: time.Second}, 200, 4887500 * time.Microsecond}, // 4 + 39.5/40 − 0.1
	} {
		got, _ := c.l.ideal(zooLead, c.total)
		assert.Equal(t, c.want, got, "%s, %d GETs", c.l, c.total)
	}
}

// greedyNginx replays ngx_http_limit_req_module's rule on a millisecond
// clock (nginx's own): the excess, in thousandths of a request, drains at
// rate·ms and grows by 1000 per request served; a request that would take
// it past burst·1000 is refused and changes nothing; a new key starts at
// 0. It returns when the last of total requests is served.
func greedyNginx(l nginxLimit, total int) time.Duration {
	var now, last, excess int64 // ms, ms, thousandths
	for i := 1; i < total; i++ {
		for {
			e := max(excess-int64(l.rate)*(now-last)+1000, 0)
			if e <= int64(l.burst)*1000 {
				excess, last = e, now
				break
			}
			now++
		}
	}
	return time.Duration(now) * time.Millisecond
}

// greedyBucket reserves total tokens one after another from a full
// x/time/rate bucket, each when the one before was granted.
func greedyBucket(l bucketLimit, total int) time.Duration {
	start := time.Unix(1e9, 0)
	lim := rate.NewLimiter(rate.Limit(l.rate), l.burst) // full at any first instant
	now := start
	for range total {
		now = now.Add(lim.ReserveN(now, 1).DelayFrom(now))
	}
	return now.Sub(start)
}

// greedyConcurrency gives each request the first of n slots to come free;
// it returns when the last answer comes back.
func greedyConcurrency(l concurrencyLimit, total int) time.Duration {
	free := make([]time.Duration, l.n)
	var end time.Duration
	for range total {
		i := 0
		for k := range free {
			if free[k] < free[i] {
				i = k
			}
		}
		free[i] += l.d
		end = max(end, free[i])
	}
	return end
}

// httprateStep is the virtual clock's step for greedyHTTPRate.
const httprateStep = 100 * time.Microsecond

// greedyHTTPRate replays httprate's sliding window counter (httprateAdmits)
// on a clock of httprateStep, windows starting at multiples of the window
// from the limiter's making, the first request at lead.
func greedyHTTPRate(l httprateLimit, lead time.Duration, total int) time.Duration {
	counts := map[time.Duration]int{} // window start → requests served in it
	now := lead
	for range total {
		for {
			w := now / l.window * l.window
			f := float64(now-w) / float64(l.window)
			if httprateAdmits(l.limit, counts[w-l.window], counts[w], f) {
				counts[w]++
				break
			}
			now += httprateStep
		}
	}
	return now - lead
}

// httprateAdmits is httprate's decision (RateLimiter.OnLimit over its
// local counter) for one more request a fraction f into the current
// window, given the previous and current windows' counts: the weighted
// count rounded, plus one, within limit.
func httprateAdmits(limit, prev, curr int, f float64) bool {
	count := float64(prev)*(1-f) + float64(curr)
	return int(math.Round(count))+1 <= limit
}

// TestZooTableRows runs the zoo with -quick for bare net/http alone (no
// retries: each run takes a few milliseconds) and reads the table back:
// three rows per scenario, its first set's; the ideal column worked out
// from the parameters; each request sent once, each refusal a failure.
func TestZooTableRows(t *testing.T) {
	nginx := zooHasNginx(t)
	var names []string
	for _, z := range zooScenarios {
		names = append(names, z.name)
	}
	var out, errs bytes.Buffer
	require.Zero(t, run([]string{"-quick", "-scenarios", strings.Join(names, ","), "-clients", "bare"}, &out, &errs), errs.String())
	t.Logf("\n%s", out.String())
	tb := parseTable(t, out.String())
	assert.Len(t, tb.rows, 3*len(zooScenarios), "-quick leaves the Full rows out")
	for _, z := range zooScenarios {
		set := z.runSets(true)[0]
		p := fmt.Sprintf("%s (%s)", z.name, set.limit)
		ideal, _ := set.limit.ideal(zooLead, set.total)
		timeLabel := p + ": wall time (× ideal)"
		assert.True(t, strings.HasPrefix(tb.cell(t, timeLabel, "ideal"), dur(ideal)+" ("+strconv.Itoa(set.total)+" GETs from "), tb.cell(t, timeLabel, "ideal"))
		loadLabel := fmt.Sprintf("%s: requests received / %s sent", p, z.refusal)
		assert.Equal(t, fmt.Sprintf("%d / 0", set.total), tb.cell(t, loadLabel, "ideal"))
		if strings.HasPrefix(z.name, "zoo-nginx") && !nginx {
			continue
		}
		rec, ref, ok := strings.Cut(tb.cell(t, loadLabel, "bare net/http"), " / ")
		require.True(t, ok)
		assert.Equal(t, strconv.Itoa(set.total), rec, "%s: bare sends each request once", z.name)
		failed := tb.cell(t, p+": requests failed (error or non-200)", "bare net/http")
		assert.True(t, strings.HasPrefix(failed, ref+" ("), "%s: every refusal is a failure: %q, %s refused", z.name, failed, ref)
	}
}

// TestZooWithoutNginxSaysSo: with no nginx the zoo-nginx cells say why
// they are empty, the ideal is still given, and the run succeeds.
func TestZooWithoutNginxSaysSo(t *testing.T) {
	old := nginxBins
	nginxBins = []string{"nginx-that-is-not-installed"}
	t.Cleanup(func() { nginxBins = old })
	var out, errs bytes.Buffer
	require.Zero(t, run([]string{"-quick", "-scenarios", "zoo-nginx-429,zoo-nginx-503", "-clients", "bare,heed"}, &out, &errs), errs.String())
	tb := parseTable(t, out.String())
	require.Len(t, tb.rows, 6)
	for label := range tb.rows {
		assert.True(t, strings.HasPrefix(label, "zoo-nginx-"), label)
		for _, col := range []string{"bare net/http", "heed"} {
			assert.Equal(t, "skipped: "+nginxMissing, tb.cell(t, label, col), label)
		}
		assert.NotEqual(t, "—", tb.cell(t, label, "ideal"), label)
	}
}

// zooBound is heed's bound on a zoo set's wall time, as a multiple of its
// ideal: 2× where the server rounds its hint up to whole seconds on a limit
// that refills in milliseconds (every refusal then costs a second that no
// client honouring it may use), 1.5× elsewhere. (zoo-httprate's time
// depends on the phase of its windows against whole seconds: over ten
// phases it went over 1.5× in 4 of 52 heed-only runs before d426dee and
// in 1 of 104 since, docs/pacing.md says how; a set over its bound runs
// once more.)
func zooBound(z *zooScenario) float64 {
	if z.name == "zoo-nginx-429" || z.name == "zoo-bucket-seconds" {
		return 2
	}
	return 1.5
}

// TestZooHeedMeetsTheBounds runs every set of every zoo scenario for heed
// alone, one after another, so that no run shares the machine with another
// (about 80 s): no request fails, and each wall time is within zooBound of
// the ideal. Timing on a shared machine is noisy: a set
// over its bound runs once more, and the second run is judged. Under the
// race detector the bounds are logged, not asserted.
func TestZooHeedMeetsTheBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("the zoo's full sets take about 80 s")
	}
	nginx := zooHasNginx(t)
	var heed Client
	for _, c := range clients {
		if c.Name == "heed" {
			heed = c
		}
	}
	require.NotEmpty(t, heed.Name)
	for _, z := range zooScenarios {
		if strings.HasPrefix(z.name, "zoo-nginx") && !nginx {
			continue
		}
		func() {
			for _, set := range z.sets {
				t.Run(fmt.Sprintf("%s/%s", z.name, set.limit), func(t *testing.T) {
					bound := zooBound(z)
					var r zooRun
					for try := 1; try <= 2; try++ {
						r = zooOnce(set, heed, herdCap)
						require.NoError(t, r.err)
						t.Logf("run %d: %s, ideal %s (%.2f×; bound %g×), %d received, %d refused, %d failed %v",
							try, dur(r.wall), dur(r.ideal), float64(r.wall)/float64(r.ideal), bound, r.received, r.refused, r.failed, r.why)
						if raceEnabled || float64(r.wall) <= bound*float64(r.ideal) {
							break
						}
					}
					assert.Zero(t, r.failed, "no request fails")
					if !raceEnabled {
						assert.LessOrEqual(t, float64(r.wall), bound*float64(r.ideal), "within %g× the ideal", bound)
					}
				})
			}
		}()
	}
}

// TestNginxReadyTellsItFromAnotherServer: a server that took nginx's port
// between its choice and nginx binding it is not taken for nginx, whatever
// it answers; a started nginx is.
func TestNginxReadyTellsItFromAnotherServer(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header string // the readiness header it answers with
	}{
		{"200, no header", http.StatusOK, ""},
		{"204, no header", http.StatusNoContent, ""},
		{"204, another nginx's folder", http.StatusNoContent, "/tmp/heed-bench-nginx-other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set(nginxReady, tt.header)
				}
				w.WriteHeader(tt.status)
			}))
			defer other.Close()
			s := &nginxServer{dir: "/tmp/heed-bench-nginx-this", addr: other.Listener.Addr().String()}
			assert.Error(t, s.ready())
		})
	}
	if !zooHasNginx(t) {
		return
	}
	s, err := startNginx(nginxLimit{rate: 10, burst: 1})
	require.NoError(t, err)
	assert.NoError(t, s.ready(), "a started nginx is ready")
	assert.Zero(t, s.stop().received, "the readiness location is not logged")
}
