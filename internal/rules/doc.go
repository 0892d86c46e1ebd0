// Package rules holds the decisions heed and its adapters make alike: how
// long a call may spend, what makes a request safe to send again, how a URL
// is shown without its secrets, and how to wait. Keeping them in one place
// keeps package heed and package retryable from drifting apart.
package rules
