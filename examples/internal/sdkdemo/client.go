// The *http.Client an SDK is given: heed over a transport of its own.

package sdkdemo

import (
	"net/http"

	"github.com/heed-go/heed"
)

// HTTPClient returns an *http.Client whose transport is heed, built with
// opts, over a clone of http.DefaultTransport, so that the client's
// CloseIdleConnections closes only its own connections. It is safe for
// concurrent use, as any *http.Client.
func HTTPClient(opts ...heed.Option) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: heed.New(base, opts...)}
}
