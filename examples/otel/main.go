// Command otel shows heed observed with OpenTelemetry: heed outside
// otelhttp's transport, so that each attempt is a client span of its own
// under the caller's span, and heedotel's metrics and span events.
//
// Without -url it starts a fake API on 127.0.0.1 that plays four
// scenarios: a 429 waited out (retry-after-ms), a published quota spent
// (the next request waits at heed's gate), a 429 whose Retry-After cannot
// fit the deadline (a *heed.DeferredError at once), and an
// insufficient_quota 429 (terminal: not retried). Then it prints heed's
// metrics, as an in-memory reader collected them, and the span tree.
//
// With -url it plays the same calls against that server, which must answer
// the paths as the fake does.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/heed-go/heed/heedotel"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("otel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "base URL of an API that plays the scenarios (empty: start a fake one on 127.0.0.1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" {
		srv := newFakeServer()
		defer srv.Close()
		*url = srv.URL
	}
	tel := newTelemetry()
	defer func() { _ = tel.shutdown(context.Background()) }()
	if err := demo(ctx, stdout, tel, *url); err != nil {
		fmt.Fprintln(stderr, "otel:", err)
		return 1
	}
	metrics, err := tel.metrics(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "otel:", err)
		return 1
	}
	fmt.Fprintln(stdout, "\n# metrics")
	printMetrics(stdout, metrics)
	fmt.Fprintln(stdout, "\n# spans")
	printSpans(stdout, tel.ended())
	return 0
}

// demo plays the scenarios against baseURL, recording into tel, and
// prints one line for each.
func demo(ctx context.Context, w io.Writer, tel *telemetry, baseURL string) error {
	obs, err := heedotel.New(heedotel.WithMeterProvider(tel.meters))
	if err != nil {
		return err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	client := newClient(base, tel, obs)
	tracer := tel.traces.Tracer("github.com/heed-go/heed/examples/otel")
	fmt.Fprintln(w, "# scenarios")
	for _, s := range scenarios {
		outcome, err := play(ctx, client, tracer, baseURL, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(w, "%-48s %s\n", s.name, outcome)
	}
	return nil
}
