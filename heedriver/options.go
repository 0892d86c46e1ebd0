// Options: what a Middleware does beyond snoozing and keys.

package heedriver

// Option configures a Middleware made by New.
type Option interface {
	apply(*config)
}

// config is what the options set.
type config struct {
	cancelTerminal bool
	resumeQueue    string // "" when queues are not paused
}

// optionFunc is an Option made of a function.
type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithCancelTerminal makes the Middleware cancel, with river.JobCancel, a
// job whose Work returns an error wrapping a *TerminalError, so River does
// not retry a failure no retry fixes. Default false: such an error is an
// ordinary error, retried by River's retry policy until MaxAttempts, then
// discarded.
func WithCancelTerminal(on bool) Option {
	return optionFunc(func(c *config) { c.cancelTerminal = on })
}

// WithPauseQueue makes the Middleware pause a deferred job's queue until
// RetryAt (Client.QueuePause), so that no client fetches another job of
// that queue for an API that has asked to be left alone, and schedule its
// resumption as a ResumeArgs job in resumeQueue, which a client must work
// with a ResumeWorker registered. Only a deferral that carries the
// server's wait pauses: a hold at heed's gate ("cooling down"), or one
// after a throttle (a 429 or 503, or DefaultClassifier's "rate limited" or
// "overloaded"); a backoff after a 5xx, "pacing", "concurrency limit" and
// "queue full" only snooze the job. Clients stop fetching when River tells
// them of the pause (milliseconds with a notifier; a job fetched before
// then meets heed's gate and is snoozed in turn). The pause covers the
// whole queue: give the jobs of one API a queue of their own. Jobs of
// resumeQueue itself are snoozed but never pause it, so resumeQueue must be
// a queue of its own too, listed in river.Config.Queues: with River's
// usual single river.QueueDefault, naming it here pauses nothing. Default
// "": queues are not paused. See ResumeArgs for the guarantees.
func WithPauseQueue(resumeQueue string) Option {
	return optionFunc(func(c *config) { c.resumeQueue = resumeQueue })
}
