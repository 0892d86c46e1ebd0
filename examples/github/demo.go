// The demonstration the program runs against its own fake server.

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"go.uber.org/zap"
)

// scenario is one demonstration against its own fake server: calls made
// in order, "core" or "search".
type scenario struct {
	title        string
	core, search []reply
	calls        []string
	sdkCheck     bool
}

// scenarios are what the program shows when no -base-url is given.
var scenarios = []scenario{
	{
		title: "a primary limit (403, x-ratelimit-remaining: 0) is waited out to x-ratelimit-reset",
		core:  []reply{primary(http.StatusForbidden, time.Second), ok(4999, time.Hour)}, calls: []string{core},
	},
	{
		title: "a secondary limit with retry-after: 1 is waited out",
		core:  []reply{secondary(time.Second), ok(4999, time.Hour)}, calls: []string{core},
	},
	{
		title: "a primary limit resetting in 2 minutes defers to the reset",
		core:  []reply{primary(http.StatusForbidden, 2*time.Minute)}, calls: []string{core},
	},
	{
		title:  "a spent search limit holds search calls only: GitHub names it (x-ratelimit-resource: search), and core calls go on",
		search: []reply{primary(http.StatusForbidden, 2*time.Minute)}, core: []reply{ok(4999, time.Hour)},
		calls: []string{search, core, search},
	},
	{
		title: "go-github's own check left on: after remaining 0 it refuses the next call without asking heed",
		core:  []reply{ok(0, 2*time.Minute), ok(4999, time.Hour)}, calls: []string{core, core}, sdkCheck: true,
	},
}

// demo runs every scenario against a loopback fake GitHub API and
// reports what the caller saw.
func demo(ctx context.Context, out io.Writer, log *zap.Logger) error {
	for i, s := range scenarios {
		sdkdemo.Title(out, i, s.title)
		fake := newFakeGitHub(s.core, s.search)
		c, err := newClient(fake.URL(), "ghp_fake", log, s.sdkCheck)
		if err != nil {
			fake.Close()
			return err
		}
		for _, call := range s.calls {
			result, took, err := sdkdemo.Timed(ctx, 10*time.Second, func(ctx context.Context) (string, error) {
				if call == core {
					name, err := c.getRepo(ctx, "heed-go", "heed")
					return "repository " + name, err
				}
				n, err := c.searchRepos(ctx, "heed language:go")
				return fmt.Sprintf("%d result(s)", n), err
			})
			if err != nil {
				result = describe(err)
			}
			fmt.Fprintf(out, "   %s call: %s (took %s)\n", call, result, took)
		}
		fmt.Fprintf(out, "   requests sent: core %d, search %d\n", len(fake.Arrivals(core)), len(fake.Arrivals(search)))
		c.Close()
		fake.Close()
	}
	return nil
}
