package main

import (
	"context"
	"fmt"
	"io"
	"time"

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
		fmt.Fprintf(out, "%d. %s\n", i+1, s.title)
		fake := newFakeOpenAI(s.script...)
		c := newClient(fake.URL(), "sk-fake", log)

		sctx, cancel := context.WithTimeout(ctx, s.deadline)
		start := time.Now()
		text, err := c.ask(sctx, model, "Say hello.")
		took := time.Since(start)
		cancel()

		if err == nil {
			fmt.Fprintf(out, "   reply: %q\n", text)
		} else {
			fmt.Fprintf(out, "   %s\n", describe(err))
		}
		fmt.Fprintf(out, "   requests sent: %d, took %s\n", len(fake.Arrivals()), took.Round(time.Millisecond))
		c.Close()
		fake.Close()
	}
}
