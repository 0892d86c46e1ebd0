package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heed-go/heed"
)

// scenario is one call the program makes, under a span of its own.
type scenario struct {
	name     string // the caller's span
	method   string
	path     string
	body     string
	deadline time.Duration
}

// scenarios are played in this order.
var scenarios = []scenario{
	{name: "models: 429 waited out", method: "GET", path: "/v1/models", deadline: 10 * time.Second},
	{name: "models: published quota spent, wait at the gate", method: "GET", path: "/v1/models", deadline: 10 * time.Second},
	{name: "images: deferred", method: "POST", path: "/v1/images/generations", body: `{"prompt":"a lighthouse"}`, deadline: 2 * time.Second},
	{name: "chat: terminal quota", method: "POST", path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini"}`, deadline: 10 * time.Second},
}

// play makes the call of s against baseURL under a span named s.name and
// returns what came of it in a few words.
func play(ctx context.Context, client *http.Client, tracer trace.Tracer, baseURL string, s scenario) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.deadline)
	defer cancel()
	ctx, span := tracer.Start(ctx, s.name)
	defer span.End()

	var body io.Reader
	if s.body != "" {
		body = strings.NewReader(s.body)
	}
	req, err := http.NewRequestWithContext(ctx, s.method, baseURL+s.path, body)
	if err != nil {
		return "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	var de *heed.DeferredError
	switch {
	case errors.As(err, &de):
		return fmt.Sprintf("deferred: retry at %s (wait %s, %s left)", de.RetryAt.UTC().Format(time.RFC3339), de.Wait, de.Left.Round(time.Millisecond)), nil
	case err != nil:
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "", err
	}
	return resp.Status, nil
}
