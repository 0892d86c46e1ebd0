// The calls the program makes, one of each rate-limit resource, and the
// one it makes with -base-url.

package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/heed-go/heed/examples/internal/sdkdemo"
	"go.uber.org/zap"
)

// getRepo fetches a repository: a core call. It returns the full name.
func (c *client) getRepo(ctx context.Context, owner, repo string) (string, error) {
	r, _, err := c.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return "", err
	}
	return r.GetFullName(), nil
}

// searchRepos searches repositories: a search call. It returns the count.
func (c *client) searchRepos(ctx context.Context, query string) (int, error) {
	res, _, err := c.Search.Repositories(ctx, query, nil)
	if err != nil {
		return 0, err
	}
	return res.GetTotal(), nil
}

// repoFlags registers -repo and returns the live call: the repository
// fetched from baseURL (a slash added if missing), with the token in
// GITHUB_TOKEN if set, its full name printed.
func repoFlags(fs *flag.FlagSet) sdkdemo.Connect {
	repo := fs.String("repo", "heed-go/heed", "owner/name of the repository to fetch (with -base-url)")
	return func(baseURL string, log *zap.Logger) (sdkdemo.Live, error) {
		owner, name, found := strings.Cut(*repo, "/")
		if !found || owner == "" || name == "" {
			return sdkdemo.Live{}, errors.New("-repo must be owner/name")
		}
		if !strings.HasSuffix(baseURL, "/") {
			baseURL += "/"
		}
		c, err := newClient(baseURL, os.Getenv("GITHUB_TOKEN"), log, false)
		if err != nil {
			return sdkdemo.Live{}, err
		}
		get := func(ctx context.Context) (string, error) { return c.getRepo(ctx, owner, name) }
		return sdkdemo.Live{Do: get, Close: c.Close}, nil
	}
}
