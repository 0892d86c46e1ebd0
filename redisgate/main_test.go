package redisgate

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quiet is a go-redis logger that drops what go-redis would print: its
// failures to dial a server the tests stopped.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	if os.Getenv(workerEnv) != "" {
		os.Exit(fleetWorker())
	}
	goleak.VerifyTestMain(m,
		// A go-redis pool that failed to dial (the tests stop servers)
		// redials in the background, and sees that its client closed only
		// after a sleep of a second.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		// A dial that a call which gave up had queued goes on in the
		// background, retrying a stopped server for half a second.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).queuedNewConn.func2"))
}
