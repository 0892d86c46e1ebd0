package heedotel

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/heed-go/heed"
)

// common returns the attributes every record of e carries: the route, the
// method and the server's host.
func common(kv []attribute.KeyValue, e *heed.Event) []attribute.KeyValue {
	kv = append(kv, AttrRoute.String(e.Route), method(e.Method))
	if h := host(e.URL); h != "" {
		kv = append(kv, semconv.ServerAddress(h))
	}
	return kv
}

// status appends http.response.status_code when there was a response.
func status(kv []attribute.KeyValue, code int) []attribute.KeyValue {
	if code != 0 {
		kv = append(kv, semconv.HTTPResponseStatusCode(code))
	}
	return kv
}

// method returns http.request.method as the semantic conventions want it:
// a known method as it is, any other as "_OTHER", and "" as "GET" (as
// net/http sends it).
func method(m string) attribute.KeyValue {
	switch m {
	case "", http.MethodGet:
		return semconv.HTTPRequestMethodGet
	case http.MethodPost:
		return semconv.HTTPRequestMethodPost
	case http.MethodPut:
		return semconv.HTTPRequestMethodPut
	case http.MethodPatch:
		return semconv.HTTPRequestMethodPatch
	case http.MethodDelete:
		return semconv.HTTPRequestMethodDelete
	case http.MethodHead:
		return semconv.HTTPRequestMethodHead
	case http.MethodOptions:
		return semconv.HTTPRequestMethodOptions
	case http.MethodTrace:
		return semconv.HTTPRequestMethodTrace
	case http.MethodConnect:
		return semconv.HTTPRequestMethodConnect
	}
	return semconv.HTTPRequestMethodOther
}

// host returns the host of a redacted URL ("scheme://host[:port]/path"),
// without its port, as server.address wants it.
func host(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexByte(u, '/'); i >= 0 {
		u = u[:i]
	}
	if strings.HasPrefix(u, "[") { // [::1]:8080
		if i := strings.IndexByte(u, ']'); i >= 0 {
			return u[1:i]
		}
		return u
	}
	if i := strings.LastIndexByte(u, ':'); i >= 0 && strings.IndexByte(u, ':') == i {
		return u[:i]
	}
	return u
}
