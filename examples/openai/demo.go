// The demonstration the program runs against its own fake server.

package main

import (
	"context"
	"io"
	"time"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"go.uber.org/zap"
)

// scenario is one demonstration against its own fake server.
type scenario struct {
	title    string
	script   []reply
	deadline time.Duration
}

// scenarios are what the program shows when no -base-url is given.
var scenarios = []scenario{
	{"a rate-limit 429 is waited out", []reply{rateLimited(300 * time.Millisecond), completion("Hello from the fake OpenAI.")}, 10 * time.Second},
	{"an insufficient_quota 429 stops at once", []reply{insufficientQuota()}, 10 * time.Second},
	{"a wait longer than the deadline defers at once", []reply{rateLimited(30 * time.Second)}, 2 * time.Second},
}

// demo runs every scenario against a loopback fake OpenAI server and
// reports what the caller saw.
func demo(ctx context.Context, out io.Writer, log *zap.Logger, model string) {
	for i, s := range scenarios {
		sdkdemo.Title(out, i, s.title)
		fake := newFakeOpenAI(s.script...)
		c := newClient(fake.URL(), "sk-fake", log)
		sdkdemo.AskScene(ctx, out, c, model, s.deadline, func() int { return len(fake.Arrivals()) }, describe)
		fake.Close()
	}
}
