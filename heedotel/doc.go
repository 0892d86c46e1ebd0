// Package heedotel records heed's decisions with OpenTelemetry: metrics for
// dashboards, and span events on the caller's span for traces, so that a
// queue that waits by design can be told apart from one that has stopped.
//
//	obs, err := heedotel.New() // the global MeterProvider
//	if err != nil {
//		return err
//	}
//	client := &http.Client{Transport: heed.New(
//		otelhttp.NewTransport(http.DefaultTransport), // one client span per attempt
//		heed.WithObserver(obs.Observe),
//	)}
//
// # Metrics
//
//	heed.attempts       counter         every attempt sent, by route, class, reason, method, status
//	heed.wait           histogram (s)   every in-process wait: a scheduled retry or a gate wait, by source
//	heed.deferrals      counter         every *heed.DeferredError returned
//	heed.gate.waiting   up-down counter requests waiting at the gate right now
//	heed.giveups        counter         retryable failures handed over unretried, by why
//
// Attribute names follow the OpenTelemetry semantic conventions where one
// exists (http.request.method, http.response.status_code, server.address,
// error.type) and are heed's own otherwise (heed.route, heed.class, ...);
// see the Attr constants. Every value is low in cardinality: a route name,
// a class, a reason from the classifier, a status code, a host.
//
// # Spans
//
// The Observer starts no span. It adds events to the span already in the
// request's context (the caller's): "heed.wait" for every wait,
// "heed.deferred" for a deferral (and the span attribute heed.deferred=true),
// "heed.terminal" when a failure no wait fixes is delivered, and
// "heed.give_up" when a retryable failure is handed over unretried. It never
// sets the span's status: a deferral is an outcome the caller planned for,
// not an error, and the span is the caller's to judge. Put otelhttp's
// transport inside heed to get a client span per attempt.
//
// # Its own module
//
// heedotel is a module of its own, github.com/heed-go/heed/heedotel, so that
// programs using heed without OpenTelemetry do not download, vet or build
// the OpenTelemetry API and SDK: heed's own go.mod stays at zap and a few
// small modules. heed calls the Observer through heed.WithObserver, a plain
// func(heed.Event), so heed needs nothing from this package.
package heedotel
