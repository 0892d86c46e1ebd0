// The programs whose SDK answers a prompt with text: flags -model and
// -prompt, the API key in an environment variable, and demo scenes that
// ask once and count the requests sent.

package sdkdemo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
)

// Asker is an SDK client that answers a prompt to a model with text.
type Asker interface {
	Ask(ctx context.Context, model, prompt string) (string, error)
	// Close releases the client's connections.
	Close()
}

// Prompt is a Program for an SDK that answers a prompt. Every field is
// required. With -base-url, Run sends -prompt to -model (default Model)
// with the key in the environment variable KeyEnv; an unset key is a
// usage error. Like Program, it keeps no state between runs.
type Prompt[C Asker] struct {
	Name    string // as Program.Name
	BaseURL string // as Program.BaseURL
	Model   string // -model's default
	KeyEnv  string // the environment variable holding the API key
	// Client makes the SDK client for baseURL with key.
	Client func(baseURL, key string, log *zap.Logger) C
	// Demo plays the story against loopback fakes, asking model.
	Demo func(ctx context.Context, out io.Writer, log *zap.Logger, model string)
	// Describe says what an error of the SDK means.
	Describe func(error) string
}

// Run is Program.Run for p.
func (p Prompt[C]) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var model *string
	return Program{
		Name:     p.Name,
		BaseURL:  p.BaseURL,
		Describe: p.Describe,
		Flags: func(fs *flag.FlagSet) Connect {
			model = fs.String("model", p.Model, "model to ask")
			prompt := fs.String("prompt", "Say hello in five words.", "what to ask (with -base-url)")
			return func(baseURL string, log *zap.Logger) (Live, error) {
				key, err := RequireEnv(p.KeyEnv)
				if err != nil {
					return Live{}, err
				}
				c := p.Client(baseURL, key, log)
				ask := func(ctx context.Context) (string, error) { return c.Ask(ctx, *model, *prompt) }
				return Live{Do: ask, Close: c.Close}, nil
			}
		},
		Demo: func(ctx context.Context, out io.Writer, log *zap.Logger) error {
			p.Demo(ctx, out, log, *model)
			return nil
		},
	}.Run(ctx, args, stdout, stderr)
}

// AskScene is the body of a prompt demo's scene: c asks model "Say
// hello." under deadline, and the reply (or describe of the error) is
// printed, then sent(), the requests the fake received, and the time the
// call took. c is closed afterwards.
func AskScene[C Asker](ctx context.Context, out io.Writer, c C, model string, deadline time.Duration, sent func() int, describe func(error) string) {
	defer c.Close()
	text, took, err := Timed(ctx, deadline, func(ctx context.Context) (string, error) {
		return c.Ask(ctx, model, "Say hello.")
	})
	if err == nil {
		fmt.Fprintf(out, "   reply: %q\n", text)
	} else {
		fmt.Fprintf(out, "   %s\n", describe(err))
	}
	fmt.Fprintf(out, "   requests sent: %d, took %s\n", sent(), took)
}
