package jobpoll_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/jobpoll"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

var terminal = []string{"succeeded", "failed", "canceled"}

// TestPollWaits asserts the exact time of every check: a server hint is
// waited exactly, raised to MinWait when smaller, and backoff fills in
// when there is none.
func TestPollWaits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		poller  jobpoll.Poller
		answers []answer
		want    []time.Duration // offsets of the checks
	}{
		{
			name:    "hint waited exactly",
			answers: []answer{hinted("running", "3"), hinted("running", "7"), state("succeeded")},
			want:    seconds(0, 3, 10),
		},
		{
			name:    "zero hint floored to the default MinWait",
			answers: []answer{hinted("running", "0"), state("succeeded")},
			want:    seconds(0, 1),
		},
		{
			name:    "zero hint floored to MinWait",
			poller:  jobpoll.Poller{MinWait: 2500 * time.Millisecond},
			answers: []answer{hinted("running", "0"), hinted("running", "1"), hinted("running", "4"), state("succeeded")},
			want:    seconds(0, 2.5, 5, 9),
		},
		{
			name:    "no hint: backoff",
			poller:  jobpoll.Poller{Backoff: func(n int) time.Duration { return time.Duration(n) * time.Second }},
			answers: []answer{state("running"), state("running"), state("running"), state("succeeded")},
			want:    seconds(0, 1, 3, 6),
		},
		{
			name:    "hint and backoff mixed",
			poller:  jobpoll.Poller{Backoff: heed.Constant(5 * time.Second)},
			answers: []answer{hinted("running", "2"), state("running"), hinted("running", "1"), state("succeeded")},
			want:    seconds(0, 2, 7, 8),
		},
		{
			name:    "terminal at once: one check",
			answers: []answer{state("failed")},
			want:    seconds(0),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := scripted(tc.answers...)
				p := tc.poller
				p.Terminal = terminal
				start := time.Now()
				st, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{}))
				require.NoError(t, err)
				assert.Equal(t, tc.want, rt.times(start))
				last := tc.answers[len(tc.answers)-1]
				assert.JSONEq(t, last.body, string(st.Body))
				assert.Equal(t, tc.want[len(tc.want)-1], time.Since(start), "Poll returns right after the terminal check")
			})
		})
	}
}

// TestPollDefaultBackoff asserts heed.EqualJitter(1s, 30s): each wait is in
// [half, full] of a doubling interval.
func TestPollDefaultBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := scripted(state("running"), state("running"), state("running"), state("running"), state("succeeded"))
		p := jobpoll.Poller{Terminal: terminal}
		start := time.Now()
		_, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{}))
		require.NoError(t, err)
		at := rt.times(start)
		require.Len(t, at, 5)
		for i, full := range seconds(1, 2, 4, 8) {
			wait := at[i+1] - at[i]
			assert.GreaterOrEqual(t, wait, full/2, "wait %d", i+1)
			assert.LessOrEqual(t, wait, full, "wait %d", i+1)
		}
	})
}

// TestPollDeadline asserts that the deadline is checked before each wait,
// never after: Poll returns at once, at the last check, when the next one
// would come too late.
func TestPollDeadline(t *testing.T) {
	for _, tc := range []struct {
		name      string
		deadline  time.Duration // Poller.Deadline
		ctxLimit  time.Duration // context deadline, 0: none
		answers   []answer
		checks    []time.Duration
		wantErr   bool
		nextCheck time.Duration // offset of TimeoutError.NextCheck
	}{
		{
			name:     "next check past the deadline",
			deadline: 10 * time.Second,
			answers:  []answer{hinted("running", "4")},
			checks:   seconds(0, 4, 8), wantErr: true, nextCheck: 12 * time.Second,
		},
		{
			name:     "context deadline counts too",
			deadline: time.Hour, ctxLimit: 5 * time.Second,
			answers: []answer{hinted("running", "10")},
			checks:  seconds(0), wantErr: true, nextCheck: 10 * time.Second,
		},
		{
			name:     "a wait ending right at the deadline fits",
			deadline: 8 * time.Second,
			answers:  []answer{hinted("running", "4"), hinted("running", "4"), state("succeeded")},
			checks:   seconds(0, 4, 8),
		},
		{
			name:     "zero backoff still meets the deadline",
			deadline: 0, ctxLimit: 3 * time.Second,
			answers: []answer{state("running")},
			checks:  nil, wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tc.ctxLimit > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxLimit)
					defer cancel()
				}
				rt := scripted(tc.answers...)
				p := jobpoll.Poller{Terminal: terminal, Deadline: tc.deadline}
				if tc.checks == nil {
					// A zero backoff with time standing still: each check
					// takes 1s, and the deadline stops the loop.
					p.Backoff = heed.Constant(0)
					slow := jobpoll.CheckFunc(func(ctx context.Context) (jobpoll.Status, error) {
						time.Sleep(time.Second)
						return jobpoll.Status{State: "running"}, nil
					})
					start := time.Now()
					_, err := p.Poll(ctx, "job-1", slow)
					var te *jobpoll.TimeoutError
					require.ErrorAs(t, err, &te)
					assert.Equal(t, 3, te.Checks, "the third check ends right at the deadline; a fourth would not fit")
					assert.Equal(t, 3*time.Second, time.Since(start))
					return
				}
				start := time.Now()
				st, err := p.Poll(ctx, "job-7", checker(rt, heed.Policy{}))
				assert.Equal(t, tc.checks, rt.times(start))
				if !tc.wantErr {
					require.NoError(t, err)
					assert.Equal(t, "succeeded", st.State)
					return
				}
				var te *jobpoll.TimeoutError
				require.ErrorAs(t, err, &te)
				last := tc.checks[len(tc.checks)-1]
				assert.Equal(t, last, time.Since(start), "returned at once, without waiting")
				assert.Equal(t, "job-7", te.JobID)
				assert.Equal(t, "running", te.LastState)
				assert.Equal(t, "running", st.State)
				assert.Equal(t, len(tc.checks), te.Checks)
				assert.Equal(t, last, te.Elapsed)
				assert.Equal(t, start.Add(tc.nextCheck), te.NextCheck)
				assert.Equal(t, tc.nextCheck-last, te.Wait)
				assert.True(t, te.Timeout())
				assert.NotErrorIs(t, err, heed.ErrDeferred)
				at, ok := jobpoll.RetryAt(err)
				assert.True(t, ok)
				assert.Equal(t, te.NextCheck, at)
				assert.Contains(t, err.Error(), `job job-7 not finished within its deadline: state "running"`)
			})
		})
	}
}

// TestPollMaxWait asserts that a wait longer than MaxWait ends Poll at
// once with a *TimeoutError carrying the time to come back, whatever the
// wait came from, and that a negative MaxWait waits it out.
func TestPollMaxWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		poller  jobpoll.Poller
		first   time.Duration // PollAt's first, 0: Poll
		answers []answer
		checks  []time.Duration
		// want: the TimeoutError's Wait, MaxWait and NextCheck offset;
		// zero wantMax: no error.
		wantWait, wantMax, wantNext time.Duration
	}{
		{
			name:    "a two-hour hint past the default",
			answers: []answer{hinted("running", "7200"), state("succeeded")},
			checks:  seconds(0), wantWait: 2 * time.Hour, wantMax: time.Hour, wantNext: 2 * time.Hour,
		},
		{
			name:    "an hour's hint fits the default",
			answers: []answer{hinted("running", "3600"), state("succeeded")},
			checks:  seconds(0, 3600),
		},
		{
			name:    "backoff past MaxWait",
			poller:  jobpoll.Poller{MaxWait: 10 * time.Second, Backoff: heed.Constant(30 * time.Second)},
			answers: []answer{state("running"), state("succeeded")},
			checks:  seconds(0), wantWait: 30 * time.Second, wantMax: 10 * time.Second, wantNext: 30 * time.Second,
		},
		{
			name:    "hints within MaxWait, then one past it",
			poller:  jobpoll.Poller{MaxWait: 10 * time.Second},
			answers: []answer{hinted("running", "5"), hinted("running", "10"), hinted("running", "11"), state("succeeded")},
			checks:  seconds(0, 5, 15), wantWait: 11 * time.Second, wantMax: 10 * time.Second, wantNext: 26 * time.Second,
		},
		{
			name:    "PollAt's first time past MaxWait",
			poller:  jobpoll.Poller{MaxWait: time.Minute},
			first:   2 * time.Minute,
			answers: []answer{state("succeeded")},
			checks:  []time.Duration{}, wantWait: 2 * time.Minute, wantMax: time.Minute, wantNext: 2 * time.Minute,
		},
		{
			name:    "negative: no limit",
			poller:  jobpoll.Poller{MaxWait: -1},
			answers: []answer{hinted("running", "86400"), state("succeeded")},
			checks:  seconds(0, 86400),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := scripted(tc.answers...)
				p := tc.poller
				p.Terminal = terminal
				start := time.Now()
				var first time.Time
				if tc.first > 0 {
					first = start.Add(tc.first)
				}
				st, err := p.PollAt(t.Context(), "job-9", checker(rt, heed.Policy{MaxWait: -1}), first)
				assert.Equal(t, tc.checks, rt.times(start))
				if tc.wantMax == 0 {
					require.NoError(t, err)
					assert.Equal(t, "succeeded", st.State)
					return
				}
				var te *jobpoll.TimeoutError
				require.ErrorAs(t, err, &te)
				var last time.Duration
				if n := len(tc.checks); n > 0 {
					last = tc.checks[n-1]
				}
				assert.Equal(t, last, time.Since(start), "returned at once, without waiting")
				assert.Equal(t, tc.wantWait, te.Wait)
				assert.Equal(t, tc.wantMax, te.MaxWait)
				assert.Equal(t, start.Add(tc.wantNext), te.NextCheck)
				assert.Contains(t, err.Error(), "(MaxWait) away")
				at, ok := jobpoll.RetryAt(err)
				assert.True(t, ok)
				assert.Equal(t, te.NextCheck, at)
			})
		})
	}
}

// TestTimeoutErrorMessage asserts how a TimeoutError reads: durations
// rounded to the millisecond, "check" in the singular for one.
func TestTimeoutErrorMessage(t *testing.T) {
	next := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		err  jobpoll.TimeoutError
		want string
	}{
		{
			name: "deadline, one check",
			err:  jobpoll.TimeoutError{JobID: "j", LastState: "running", Checks: 1, Elapsed: 659670 * time.Nanosecond, Wait: 2*time.Hour - 331, NextCheck: next},
			want: `jobpoll: job j not finished within its deadline: state "running" after 659.67µs and 1 check; next check at 2026-11-29T12:00:00Z (wait 2h0m0s)`,
		},
		{
			name: "MaxWait, no check yet",
			err:  jobpoll.TimeoutError{JobID: "j", Elapsed: 1500*time.Millisecond + 400*time.Microsecond, Wait: 2 * time.Minute, NextCheck: next, MaxWait: time.Minute},
			want: `jobpoll: job j not finished, and its next check is more than 1m0s (MaxWait) away after 1.5s and 0 checks; next check at 2026-11-29T12:00:00Z (wait 2m0s)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
		})
	}
}

// TestPollAt asserts that the first check waits for its time, and that this
// wait passes the deadline test too.
func TestPollAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := scripted(state("succeeded"))
		p := jobpoll.Poller{Terminal: terminal, Deadline: 10 * time.Second}
		start := time.Now()
		_, err := p.PollAt(t.Context(), "job-1", checker(rt, heed.Policy{}), start.Add(3*time.Second))
		require.NoError(t, err)
		assert.Equal(t, seconds(3), rt.times(start))

		rt = scripted(state("succeeded"))
		start = time.Now()
		_, err = p.PollAt(t.Context(), "job-1", checker(rt, heed.Policy{}), start.Add(11*time.Second))
		var te *jobpoll.TimeoutError
		require.ErrorAs(t, err, &te)
		assert.Empty(t, rt.times(start), "no check")
		assert.Equal(t, 0, te.Checks)
		assert.Equal(t, start.Add(11*time.Second), te.NextCheck)
		assert.Zero(t, time.Since(start))
	})
}

// TestPollStates asserts how states are told apart.
func TestPollStates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		running   []string
		states    []string
		wantState string
		unknown   bool
	}{
		{"case-insensitive terminal", nil, []string{"Running", "Succeeded"}, "Succeeded", false},
		{"without Running, any state runs", nil, []string{"queued", "warming up", "failed"}, "failed", false},
		{"with Running, known states run", []string{"pending", "running"}, []string{"pending", "RUNNING", "canceled"}, "canceled", false},
		{"with Running, an unknown state is an error", []string{"pending", "running"}, []string{"pending", "exploded"}, "exploded", true},
		{"an empty state is an error without Running", nil, []string{"running", ""}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				answers := make([]answer, len(tc.states))
				for i, s := range tc.states {
					answers[i] = state(s)
				}
				rt := scripted(answers...)
				p := jobpoll.Poller{Terminal: terminal, Running: tc.running, Backoff: heed.Constant(time.Second)}
				st, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{}))
				assert.Equal(t, tc.wantState, st.State)
				assert.Len(t, rt.times(time.Now()), len(tc.states), "no check after the last state")
				if !tc.unknown {
					require.NoError(t, err)
					return
				}
				var ue *jobpoll.UnknownStateError
				require.ErrorAs(t, err, &ue)
				assert.Equal(t, tc.wantState, ue.State)
				assert.Equal(t, "job-1", ue.JobID)
				assert.Equal(t, terminal, ue.Terminal)
				assert.Contains(t, err.Error(), "unknown state")
				_, ok := jobpoll.RetryAt(err)
				assert.False(t, ok)
			})
		})
	}
}

// TestPollCheckFailures asserts that a failed status check is the
// transport's business: retried within its own time limit, then surfaced as a
// *CheckError that says nothing about the job.
func TestPollCheckFailures(t *testing.T) {
	t.Run("5xx retried by the transport, then surfaced", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := scripted(state("running"), answer{status: 502, body: "bad gateway"})
			p := jobpoll.Poller{Terminal: terminal, Backoff: heed.Constant(time.Second)}
			start := time.Now()
			st, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{MaxAttempts: 3, Backoff: heed.Constant(2 * time.Second)}))
			assert.Equal(t, seconds(0, 1, 3, 5), rt.times(start), "one good check, then three attempts of the second")
			var ce *jobpoll.CheckError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "running", ce.LastState)
			assert.Equal(t, 2, ce.Checks)
			var he *jobpoll.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, 502, he.StatusCode)
			assert.Equal(t, "bad gateway", string(he.Body))
			assert.Equal(t, "running", st.State, "the job's last known state, not a failure")
			assert.NotErrorIs(t, err, heed.ErrDeferred)
		})
	})
	t.Run("the transport defers: surfaced with its RetryAt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := scripted(state("running"), answer{status: 429, header: map[string]string{"Retry-After": "120"}})
			p := jobpoll.Poller{Terminal: terminal, Deadline: time.Hour, Backoff: heed.Constant(time.Second)}
			start := time.Now()
			_, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{MaxElapsed: 30 * time.Second}))
			assert.Equal(t, time.Second, time.Since(start), "deferred at once")
			require.ErrorIs(t, err, heed.ErrDeferred)
			var de *heed.DeferredError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, start.Add(121*time.Second), de.RetryAt)
			var ce *jobpoll.CheckError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "running", ce.LastState)
			at, ok := jobpoll.RetryAt(err)
			assert.True(t, ok)
			assert.Equal(t, de.RetryAt, at)
		})
	})
	t.Run("a missing state field", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := scripted(answer{body: `{"state":"running"}`})
			p := jobpoll.Poller{Terminal: terminal}
			_, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{}))
			var fe *jobpoll.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "status", fe.Path)
			assert.Equal(t, "missing", fe.Reason)
		})
	})
	t.Run("a body that is not JSON", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := scripted(answer{body: `<html>maintenance</html>`})
			p := jobpoll.Poller{Terminal: terminal}
			_, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{}))
			var ce *jobpoll.CheckError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), "not JSON")
		})
	})
}

// TestPollContextCanceled asserts that a cancel during a wait ends Poll at
// once with the context's error.
func TestPollContextCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		rt := scripted(hinted("running", "30"))
		p := jobpoll.Poller{Terminal: terminal}
		start := time.Now()
		time.AfterFunc(5*time.Second, cancel)
		_, err := p.Poll(ctx, "job-1", checker(rt, heed.Policy{}))
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Len(t, rt.times(start), 1)
	})
}

func TestPollMisuse(t *testing.T) {
	_, err := (&jobpoll.Poller{}).Poll(t.Context(), "job-1", jobpoll.CheckFunc(func(context.Context) (jobpoll.Status, error) {
		t.Fatal("checked without terminal states")
		return jobpoll.Status{}, nil
	}))
	require.ErrorIs(t, err, jobpoll.ErrNoTerminal)
	_, err = (&jobpoll.Poller{Terminal: terminal}).Poll(t.Context(), "job-1", nil)
	require.Error(t, err)
	_, ok := jobpoll.RetryAt(errors.New("other"))
	assert.False(t, ok)
}

// TestPollCheckFunc asserts that any Checker works, with a hint of its own.
func TestPollCheckFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		var at []time.Duration
		start := time.Now()
		c := jobpoll.CheckFunc(func(context.Context) (jobpoll.Status, error) {
			at = append(at, time.Since(start))
			n++
			if n < 3 {
				// A past date, which heed.Hint gives as 0: floored.
				return jobpoll.Status{State: "rendering", Hint: 0, Hinted: true}, nil
			}
			return jobpoll.Status{State: "succeeded"}, nil
		})
		st, err := (&jobpoll.Poller{Terminal: terminal}).Poll(t.Context(), "job-1", c)
		require.NoError(t, err)
		assert.Equal(t, "succeeded", st.State)
		assert.Equal(t, seconds(0, 1, 2), at)
	})
}

// TestPollLogs asserts one line per decision, with the fields a countdown
// or an operator needs.
func TestPollLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.DebugLevel)
		rt := scripted(hinted("running", "3"), state("succeeded"))
		p := jobpoll.Poller{Terminal: terminal, Logger: zap.New(core)}
		start := time.Now()
		_, err := p.Poll(t.Context(), "job-1", checker(rt, heed.Policy{}))
		require.NoError(t, err)
		entries := logs.AllUntimed()
		require.Len(t, entries, 2)
		wait := entries[0].ContextMap()
		assert.Equal(t, "poll wait", wait["op"])
		assert.Equal(t, "job-1", wait["job"])
		assert.Equal(t, "running", wait["state"])
		assert.Equal(t, 3*time.Second, wait["wait"])
		assert.Equal(t, "server", wait["source"])
		assert.True(t, start.Add(3*time.Second).Equal(wait["next_check"].(time.Time)))
		assert.Equal(t, "poll done", entries[1].ContextMap()["op"])
	})
}

// TestPollOnWait asserts that OnWait hears of every wait before it is
// waited, with the last status and the time of the next check, and of no
// check that goes at once.
func TestPollOnWait(t *testing.T) {
	for _, tt := range []struct {
		name  string
		first time.Duration // PollAt's first check, after the start; 0: at once
		hints []string      // each running check's Retry-After
		want  []time.Duration
		state []string
	}{
		{"no wait", 0, nil, nil, nil},
		{"one hint", 0, []string{"3"}, []time.Duration{3 * time.Second}, []string{"running"}},
		{"two hints", 0, []string{"2", "5"}, []time.Duration{2 * time.Second, 7 * time.Second}, []string{"running", "running"}},
		{"a first check later", 4 * time.Second, []string{"1"}, []time.Duration{4 * time.Second, 5 * time.Second}, []string{"", "running"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var replies []answer
				for _, h := range tt.hints {
					replies = append(replies, hinted("running", h))
				}
				replies = append(replies, state("succeeded"))
				start := time.Now()
				var got []time.Duration
				var states []string
				p := jobpoll.Poller{Terminal: terminal, OnWait: func(last jobpoll.Status, next time.Time) {
					got = append(got, next.Sub(start))
					states = append(states, last.State)
					assert.True(t, next.After(time.Now()), "before the wait, not after")
				}}
				var first time.Time
				if tt.first > 0 {
					first = start.Add(tt.first)
				}
				st, err := p.PollAt(t.Context(), "job-1", checker(scripted(replies...), heed.Policy{}), first)
				require.NoError(t, err)
				assert.Equal(t, "succeeded", st.State)
				assert.Equal(t, tt.want, got)
				assert.Equal(t, tt.state, states)
			})
		})
	}
}

// TestHTTPCheckerRequest asserts what a status request carries.
func TestHTTPCheckerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := scripted(state("succeeded"))
		c := checker(rt, heed.Policy{})
		c.Header = http.Header{"Authorization": {"Bearer sk_test"}}
		st, err := c.Check(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "succeeded", st.State)
		assert.False(t, st.Hinted)
		require.Len(t, rt.reqs, 1)
		r := rt.reqs[0]
		assert.Equal(t, http.MethodGet, r.Method)
		assert.Equal(t, "Bearer sk_test", r.Header.Get("Authorization"))
		assert.Equal(t, "application/json", r.Header.Get("Accept"))
		assert.Equal(t, []string{"Bearer sk_test"}, c.Header["Authorization"], "the checker's header is not changed")

		assert.Empty(t, rt.bodies, "a GET has no body")

		c.Method, c.Body = http.MethodPost, []byte(`{"job":"j-1"}`)
		_, err = c.Check(t.Context())
		require.NoError(t, err)
		require.Len(t, rt.reqs, 2)
		assert.Equal(t, http.MethodPost, rt.reqs[1].Method)
		assert.Equal(t, "application/json", rt.reqs[1].Header.Get("Content-Type"))
		_, err = c.Check(t.Context())
		require.NoError(t, err)
		assert.Equal(t, []string{`{"job":"j-1"}`, `{"job":"j-1"}`}, rt.bodies, "the whole body with every check")
		c.Method, c.Body = "", nil

		c.Field = "status."
		_, err = c.Check(t.Context())
		require.ErrorContains(t, err, "trailing '.'")

		c.Field = "status"
		c.MaxBody = 4
		_, err = c.Check(t.Context())
		require.ErrorContains(t, err, "larger than 4 bytes")
	})
}
