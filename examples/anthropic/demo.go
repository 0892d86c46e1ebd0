// The demonstration the program runs against its own fake server.

package main

import (
	"context"
	"io"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"go.uber.org/zap"
)

// scenario is one demonstration against its own fake server.
type scenario struct {
	title    string
	script   []reply
	deadline time.Duration
	extra    []option.RequestOption // SDK options applied after the client's own
}

// scenarios are what the program shows when no -base-url is given.
var scenarios = []scenario{
	{title: "a 429 with retry-after: 1 is waited out", script: []reply{rateLimited(time.Second), message("Hello from the fake Anthropic.")}, deadline: 10 * time.Second},
	{title: "a 529 overloaded_error is retried", script: []reply{overloaded(), message("Served after an overload.")}, deadline: 10 * time.Second},
	{title: "a retry-after longer than the deadline defers at once", script: []reply{rateLimited(30 * time.Second)}, deadline: 2 * time.Second},
	{
		title:  "the same with the SDK's retries left on: the deferral loses the 429",
		script: []reply{rateLimited(2 * time.Minute)}, deadline: 10 * time.Second,
		extra: []option.RequestOption{option.WithMaxRetries(2)},
	},
}

// demo runs every scenario against a loopback fake Anthropic API and
// reports what the caller saw.
func demo(ctx context.Context, out io.Writer, log *zap.Logger, model string) {
	for i, s := range scenarios {
		sdkdemo.Title(out, i, s.title)
		fake := newFakeAnthropic(s.script...)
		c := newClientWith(fake.URL(), "sk-ant-fake", log, s.extra...)
		sdkdemo.AskScene(ctx, out, c, model, s.deadline, func() int { return len(fake.Arrivals()) }, describe)
		fake.Close()
	}
}
