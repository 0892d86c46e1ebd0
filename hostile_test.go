package heed_test

// Hostile hints: what heed decides for each, on the policy
// {MaxAttempts 3, MinWait 1s, MaxWait 60s, Backoff Constant(2s)}. "back off"
// means the header gives no valid hint and heed waits its Backoff; "wait"
// means it waits the hint (raised to MinWait); "defer" means a
// *DeferredError at once, and the scope's gate is held so that the next
// request defers too without being sent; "deliver" means the response is
// returned as it is. No case sends more than MaxAttempts times, sleeps
// longer than MaxWait at once, or panics.
//
//	response and header(s)                              decision
//	429 Retry-After: 99999999999999999999               back off (overflows)
//	429 Retry-After: 1e100                              back off (exponent)
//	429 Retry-After: -0                                 back off (sign)
//	429 Retry-After: +5                                 back off (sign)
//	429 Retry-After: 5 5                                back off (inner space)
//	429 Retry-After: 5, 5 (one field, comma-joined)     back off
//	429 Retry-After: 5 and Retry-After: 6               back off (conflicting fields)
//	429 Retry-After: 5 and Retry-After: 5               wait 5s (identical fields are one)
//	429 Retry-After: Fri, 31 Dec 9999 23:59:59 GMT      back off (does not fit a Duration)
//	429 Retry-After: Thu, 01 Jan 1960 00:00:00 GMT      wait MinWait (a past date is a hint of 0)
//	429 Retry-After: Thursday, 01-Jan-70 00:00:00 GMT   wait MinWait (RFC 850: 1970, past)
//	429 Retry-After: Thu Jan  1 00:00:00 1970           wait MinWait (asctime epoch, past)
//	429 Retry-After: 9223372036 (292 years, fits)       defer (over MaxWait)
//	429 retry-after-ms: 99999999999 (3.2 years)         defer (over MaxWait)
//	503 Retry-After: 99999999999999999999
//	    and retry-after-ms: 1500                        wait 1.5s (the valid one)
//	429 with 10,000 other fields and Retry-After: 3     wait 3s
//	429 with 10,000 Retry-After: 3 fields               wait 3s
//	429 with 10,000 Retry-After fields, all different   back off (conflicting)
//	429 with 10,000 RateLimit: "a";r=0;t=3 lines        wait 3s
//	429 RateLimit malformed: t= empty, no item, r=-1,
//	    t=5.5, inner list, trailing comma, upper-case
//	    key, 16-digit t, r=?1, one bad item of two,
//	    a 1 MiB line                                    back off (the field is ignored whole)
//	200 Retry-After: 1e100                              deliver
//	403 Retry-After: 1e100                              back off (Retry-After on a 403 is a
//	                                                    rate-limit signal), then deliver the
//	                                                    403 when attempts run out

import (
	"errors"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heed-go/heed"
)

const (
	hostileMinWait = time.Second
	hostileBackoff = 2 * time.Second
	hostileMaxWait = 60 * time.Second
	hostileTries   = 3
)

var hostilePolicy = heed.Policy{
	MaxAttempts: hostileTries, MinWait: hostileMinWait, MaxWait: hostileMaxWait,
	Backoff: heed.Constant(hostileBackoff),
}

// Decisions.
const (
	backOff = "back off"
	wait    = "wait"
	deferIt = "defer"
	deliver = "deliver"
)

type hostileCase struct {
	name     string
	status   int
	header   http.Header
	decision string
	wait     time.Duration // for "wait"
}

func manyFields(key string, n int, value func(i int) string) http.Header {
	h := http.Header{}
	for i := range n {
		h.Add(key, value(i))
	}
	return h
}

func hostileCases() []hostileCase {
	filler := manyFields("X-Filler", 0, nil)
	for i := range 10_000 {
		filler.Add("X-Filler-"+strconv.Itoa(i), strings.Repeat("x", 32))
	}
	filler.Set("Retry-After", "3")

	cases := []hostileCase{
		{"Retry-After: 99999999999999999999", 429, hdr("Retry-After", "99999999999999999999"), backOff, 0},
		{"Retry-After: 1e100", 429, hdr("Retry-After", "1e100"), backOff, 0},
		{"Retry-After: -0", 429, hdr("Retry-After", "-0"), backOff, 0},
		{"Retry-After: +5", 429, hdr("Retry-After", "+5"), backOff, 0},
		{"Retry-After: 5 5", 429, hdr("Retry-After", "5 5"), backOff, 0},
		{"Retry-After: 5, 5", 429, hdr("Retry-After", "5, 5"), backOff, 0},
		{"conflicting Retry-After fields", 429, hdr("Retry-After", "5", "Retry-After", "6"), backOff, 0},
		{"identical Retry-After fields", 429, hdr("Retry-After", "5", "Retry-After", "5"), wait, 5 * time.Second},
		{"year 9999", 429, hdr("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"), backOff, 0},
		{"year 1960", 429, hdr("Retry-After", "Thu, 01 Jan 1960 00:00:00 GMT"), wait, hostileMinWait},
		{"RFC 850 epoch", 429, hdr("Retry-After", "Thursday, 01-Jan-70 00:00:00 GMT"), wait, hostileMinWait},
		{"asctime epoch", 429, hdr("Retry-After", "Thu Jan  1 00:00:00 1970"), wait, hostileMinWait},
		{"Retry-After: 9223372036", 429, hdr("Retry-After", "9223372036"), deferIt, 0},
		{"retry-after-ms: 99999999999", 429, hdr("retry-after-ms", "99999999999"), deferIt, 0},
		{"overflow beside a valid ms", 503, hdr("Retry-After", "99999999999999999999", "retry-after-ms", "1500"), wait, 1500 * time.Millisecond},
		{"10,000 other fields", 429, filler, wait, 3 * time.Second},
		{"10,000 identical Retry-After", 429, manyFields("Retry-After", 10_000, func(int) string { return "3" }), wait, 3 * time.Second},
		{"10,000 different Retry-After", 429, manyFields("Retry-After", 10_000, strconv.Itoa), backOff, 0},
		{"10,000 RateLimit lines", 429, manyFields("RateLimit", 10_000, func(int) string { return `"a";r=0;t=3` }), wait, 3 * time.Second},
		{"200 with Retry-After: 1e100", 200, hdr("Retry-After", "1e100"), deliver, 0},
		{"403 with Retry-After: 1e100", 403, hdr("Retry-After", "1e100"), backOff, 0},
	}
	for _, rl := range []string{
		`"default";r=0;t=`,
		`r=0;t=30`,
		`"a";r=-1;t=5`,
		`"a";r=0;t=5.5`,
		`("a" "b");r=0;t=5`,
		`"a";r=0;t=30,`,
		`"a";R=0;t=5`,
		`"a";r=0;t=9999999999999999`,
		`"a";r=?1;t=5`,
		`"a";r=0;t=5, "b";r=0;t=x`,
		`"a";r=0;t=5;`,
		`"a";;r=0;t=5`,
		`"a" r=0;t=5`,
		`"a";r=0;t=5` + strings.Repeat(" ", 1<<20),
	} {
		name := rl
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		cases = append(cases, hostileCase{"RateLimit " + name, 429, hdr("RateLimit", rl), backOff, 0})
	}
	return cases
}

// TestHostileHints sends each hostile response once, then a 200, and
// checks heed's decision and the exact wait on the fake clock.
func TestHostileHints(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(reply{status: tc.status, header: tc.header, body: `{"error":"hostile"}`}, ok200)
				tr := heed.New(rt, heed.WithPolicy(hostilePolicy))
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/x", nil))
				took := time.Since(start)
				if resp != nil {
					resp.Body.Close()
				}
				sends := len(rt.requests())
				switch tc.decision {
				case backOff, wait:
					require.NoError(t, err)
					assert.Equal(t, 200, resp.StatusCode)
					require.Equal(t, 2, sends)
					want := hostileBackoff
					if tc.decision == wait {
						want = tc.wait
					}
					assert.Equal(t, []time.Duration{want}, rt.gaps())
				case deferIt:
					var de *heed.DeferredError
					require.ErrorAs(t, err, &de)
					assert.Equal(t, 1, sends)
					assert.Zero(t, took, "defers at once")
					assert.Greater(t, de.Wait, hostileMaxWait)
					// The gate holds the scope: the next request defers
					// without being sent.
					_, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/y", nil))
					require.ErrorAs(t, err, &de)
					assert.Zero(t, de.Attempts)
					assert.Equal(t, 1, len(rt.requests()), "nothing sent while the gate holds")
				case deliver:
					require.NoError(t, err)
					assert.Equal(t, tc.status, resp.StatusCode)
					assert.Equal(t, 1, sends)
				}
			})
		})
	}
}

// TestHostileHintsRepeated answers every attempt with the hostile
// response: heed sends at most MaxAttempts times, never back to back, and
// never sleeps more than MaxWait at once; then it delivers the last
// response, or defers.
func TestHostileHintsRepeated(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := script(reply{status: tc.status, header: tc.header})
				tr := heed.New(rt, heed.WithPolicy(hostilePolicy))
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "https://api.example/v1/x", nil))
				took := time.Since(start)
				if resp != nil {
					resp.Body.Close()
				}
				sends := len(rt.requests())
				assert.LessOrEqual(t, sends, hostileTries, "hot loop")
				assert.LessOrEqual(t, took, time.Duration(hostileTries-1)*hostileMaxWait, "slept too long")
				for _, g := range rt.gaps() {
					assert.GreaterOrEqual(t, g, hostileMinWait, "retried back to back")
				}
				switch tc.decision {
				case deferIt:
					require.ErrorIs(t, err, heed.ErrDeferred)
					assert.Equal(t, 1, sends)
				case deliver:
					require.NoError(t, err)
					assert.Equal(t, 1, sends)
				default:
					require.NoError(t, err, "attempts used up: the last response, as is")
					assert.Equal(t, tc.status, resp.StatusCode)
					assert.Equal(t, hostileTries, sends)
				}
			})
		})
	}
}

// hostileHeader builds a header from lines "Key: value" separated by "\n".
func hostileHeader(block string) http.Header {
	h := http.Header{}
	if block == "" {
		return h
	}
	for _, line := range strings.Split(block, "\n") {
		k, v, _ := strings.Cut(line, ":")
		h.Add(strings.TrimSpace(k), strings.TrimLeft(v, " \t"))
	}
	return h
}

var rateLimitT = regexp.MustCompile(`;\s*t=(\d+)`)

// hintBound returns the most a header of source says to wait, computed
// without heed's parser: exact numbers with math/big, dates with net/http.
// ok is false when the bound cannot be computed independently.
func hintBound(h http.Header, source string, now time.Time) (*big.Int, bool) {
	ceilSeconds := func(v string) (*big.Int, bool) {
		r, ok := new(big.Rat).SetString(v)
		if !ok || r.Sign() < 0 || strings.ContainsAny(v, "eE+-/") {
			return nil, false
		}
		q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
		if m.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
		return q, true
	}
	ns := func(n *big.Int, unit time.Duration) *big.Int { return new(big.Int).Mul(n, big.NewInt(int64(unit))) }
	first := func(key string) string { return strings.Trim(h.Get(key), " \t") }
	switch source {
	case "Retry-After":
		v := first("Retry-After")
		if n, ok := ceilSeconds(v); ok {
			return ns(n, time.Second), true
		}
		t, err := http.ParseTime(v)
		if err != nil {
			return nil, false
		}
		return big.NewInt(int64(max(t.Sub(now), 0))), true
	case "retry-after-ms", "x-ms-retry-after-ms":
		key := "Retry-After-Ms"
		if source != "retry-after-ms" {
			key = "X-Ms-Retry-After-Ms"
		}
		n, ok := new(big.Int).SetString(first(key), 10)
		if !ok {
			return nil, false
		}
		return ns(n, time.Millisecond), true
	case "RateLimit":
		most := big.NewInt(-1)
		for _, line := range h.Values("RateLimit") {
			for _, m := range rateLimitT.FindAllStringSubmatch(line, -1) {
				n, _ := new(big.Int).SetString(m[1], 10)
				if n.Cmp(most) > 0 {
					most = n
				}
			}
		}
		return ns(most, time.Second), most.Sign() >= 0
	case "RateLimit-Reset", "X-RateLimit-Reset":
		n, ok := ceilSeconds(first(source))
		if !ok {
			return nil, false
		}
		// A Unix time when above half of now's Unix time (and 1e8), as
		// the contract reads it against the clock; one already past says
		// to wait for nothing, as a past Retry-After date does.
		if n.Cmp(big.NewInt(max(now.Unix()/2, 100_000_000))) > 0 {
			n.Sub(n, big.NewInt(now.Unix()))
			if n.Sign() < 0 {
				n.SetInt64(0)
			}
		}
		return ns(n, time.Second), true
	}
	return nil, false
}

// FuzzHostileHeaders sends a response with a random status and header
// block through a Transport on a fake clock, then a 200. Properties: no
// panic; Hint's wait is never negative and never more than the header it
// names says (checked without heed's parser); heed delivers, defers at
// once, or retries once, never sooner than the wait it decided (the hint
// raised to MinWait, or the backoff) and never after sleeping more than
// MaxWait plus the gate's spread.
func FuzzHostileHeaders(f *testing.F) {
	for _, tc := range hostileCases() {
		if len(tc.header) > 8 || len(tc.header.Values("RateLimit")) > 8 || len(tc.header.Get("RateLimit")) > 256 {
			continue
		}
		var lines []string
		for k, vs := range tc.header {
			for _, v := range vs {
				lines = append(lines, k+": "+v)
			}
		}
		f.Add(uint16(tc.status), strings.Join(lines, "\n"))
	}
	f.Add(uint16(429), "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 946684805")
	f.Add(uint16(429), "RateLimit-Reset: 7.5")
	f.Add(uint16(503), "x-ms-retry-after-ms: 250\nretry-after-ms: 100")
	f.Add(uint16(429), "Retry-After: Sat, 01 Jan 2000 00:00:09 GMT\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 40")
	f.Add(uint16(429), "Stripe-Should-Retry: false\nRetry-After: 1")
	f.Fuzz(func(t *testing.T, status uint16, block string) {
		code := int(status%600) + 100
		h := hostileHeader(block)
		synctest.Test(t, func(t *testing.T) {
			now := time.Now()
			resp := &http.Response{StatusCode: code, Header: h, Body: http.NoBody}
			hint, source, hinted := heed.Hint(resp, now)
			if hint < 0 {
				t.Fatalf("negative hint %v from %s", hint, source)
			}
			if hinted {
				if bound, ok := hintBound(h, source, now); ok && big.NewInt(int64(hint)).Cmp(bound) > 0 {
					t.Fatalf("hint %v from %s exceeds what it says (%v ns)", hint, source, bound)
				}
			}
			req := newRequest(t, t.Context(), "GET", "https://api.example/v1/x", nil)
			verdict := heed.DefaultClassifier(req, &http.Response{StatusCode: code, Header: h, Body: http.NoBody}, nil)

			rt := script(reply{status: code, header: h}, ok200)
			tr := heed.New(rt, heed.WithPolicy(hostilePolicy))
			start := time.Now()
			got, err := tr.RoundTrip(req)
			took := time.Since(start)
			if got != nil {
				got.Body.Close()
			}
			sends := len(rt.requests())
			want := hostileBackoff
			if hinted {
				want = max(hint, hostileMinWait)
			}
			var de *heed.DeferredError
			switch {
			case verdict.Class == heed.Deliver || verdict.Class == heed.Terminal:
				if err != nil || sends != 1 || got.StatusCode != code {
					t.Fatalf("%v: want the response delivered, got %v, %v after %d sends", verdict, got, err, sends)
				}
			case errors.As(err, &de):
				// At once when the wait is over MaxWait; or, when a
				// published quota holds the gate past MaxWait, at the gate
				// after the wait.
				if sends != 1 || (want > hostileMaxWait && took != 0) {
					t.Fatalf("deferred after %v and %d sends (wait %v)", took, sends, want)
				}
			case err != nil:
				t.Fatalf("error %v", err)
			default:
				if sends != 2 || got.StatusCode != 200 {
					t.Fatalf("%d sends, status %d", sends, got.StatusCode)
				}
				gap := rt.gaps()[0]
				if gap < want {
					t.Fatalf("retried after %v, before the wait of %v", gap, want)
				}
				if gap > 2*hostileMaxWait+20*time.Millisecond {
					t.Fatalf("slept %v", gap)
				}
			}
		})
	})
}
