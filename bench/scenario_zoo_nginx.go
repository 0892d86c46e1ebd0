package main

import (
	"fmt"
	"time"
)

// zoo-nginx-429 and zoo-nginx-503: nginx's limit_req
// (scenario_zoo_nginx_server.go starts the nginx), keyed by the client's
// address, so one limit for the herd: `limit_req_zone $binary_remote_addr
// zone=zoo:1m rate=Rr/s` and `limit_req zone=zoo burst=B nodelay`.
//
//   - zoo-nginx-429: `limit_req_status 429`, and `error_page 429 =
//     @throttled` with `add_header Retry-After 1 always` there: 429 with
//     Retry-After: 1, the form a site that bothers to hint configures.
//   - zoo-nginx-503: nginx's default: 503 and no hint at all.
//
// limit_req is a leaky bucket counted in thousandths of a request: each
// request adds one to the excess, which drains at R a second; a request
// that would take it past B is refused and changes nothing. A fresh key
// starts at 0, so B + 1 requests go at once (nodelay serves the burst at
// once rather than spacing it), then one every 1/R s. The ideal is
// therefore (N − B − 1)/R.
func init() {
	(&zooScenario{
		name:    "zoo-nginx-429",
		order:   69,
		refusal: "429s",
		sets: []zooSet{
			{limit: nginxLimit{rate: 50, burst: 10, hint: true}, total: 300, workers: 32},
			{limit: nginxLimit{rate: 20, burst: 5, hint: true}, total: 200, workers: 16},
			{limit: nginxLimit{rate: 100, burst: 20, hint: true}, total: 300, workers: 32},
		},
		quickOmits: []string{"failsafe", "resty"},
	}).register()
	(&zooScenario{
		name:    "zoo-nginx-503",
		order:   70,
		refusal: "503s",
		sets: []zooSet{
			{limit: nginxLimit{rate: 50, burst: 10}, total: 300, workers: 32},
			{limit: nginxLimit{rate: 20, burst: 5}, total: 200, workers: 16},
		},
		// Without a hint the peers back off for up to 31 s a request: too
		// long for -quick.
		quickOmits: []string{"retryablehttp", "failsafe", "resty"},
	}).register()
}

// nginxLimit is one limit_req configuration.
type nginxLimit struct {
	rate, burst int // requests a second; requests beyond the rate, nodelay
	// hint answers a refused request 429 with Retry-After: 1; without it,
	// nginx's default: 503 and no hint.
	hint bool
}

// status is what nginx refuses with.
func (l nginxLimit) status() int {
	if l.hint {
		return 429
	}
	return 503
}

// key, String, start and ideal make an nginxLimit a zooLimit.
func (l nginxLimit) key() string { return fmt.Sprintf("r%d-b%d", l.rate, l.burst) }
func (l nginxLimit) String() string {
	return fmt.Sprintf("rate=%dr/s burst=%d nodelay", l.rate, l.burst)
}

func (l nginxLimit) start() (zooServer, error) {
	s, err := startNginx(l)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ideal is (total − burst − 1)/rate: burst + 1 at once, then one request
// per 1/rate.
func (l nginxLimit) ideal(_ time.Duration, total int) (time.Duration, string) {
	return time.Duration(max(total-l.burst-1, 0)) * time.Second / time.Duration(l.rate),
		fmt.Sprintf("(%d − %d − 1)/%d", total, l.burst, l.rate)
}
