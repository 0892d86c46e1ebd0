package heed

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRouteCacheStaysBoundedAndCorrect(t *testing.T) {
	r, err := compileRoutes([]routeSpec{{"/jobs/{id}", Policy{Name: "jobs"}}, {"POST /create/", Policy{Name: "create"}}})
	require.NoError(t, err)
	for i := range routeCacheSize + 500 {
		req, _ := http.NewRequest("GET", "https://api.example/jobs/"+strconv.Itoa(i), nil)
		p := r.match(req)
		require.NotNil(t, p)
		assert.Equal(t, "jobs", p.name)
		// A hit gives the same answer.
		assert.Same(t, p, r.match(req))
		assert.LessOrEqual(t, len(r.cache.m), routeCacheSize)
	}
	post, _ := http.NewRequest("POST", "https://api.example/create/x", nil)
	assert.Equal(t, "create", r.match(post).name)
	other, _ := http.NewRequest("GET", "https://api.example/else", nil)
	assert.Nil(t, r.match(other))
	assert.Nil(t, r.match(other), "a cached miss stays a miss")
}

func TestCompileRoutesReportsBadPatterns(t *testing.T) {
	for _, p := range []string{"", "GET", "/a/{", "/{x}/{x}"} {
		_, err := compileRoutes([]routeSpec{{p, Policy{}}})
		assert.Error(t, err, "pattern %q", p)
	}
	_, err := compileRoutes([]routeSpec{{"/a/", Policy{}}, {"/a/", Policy{}}})
	assert.ErrorContains(t, err, "/a/")
}
