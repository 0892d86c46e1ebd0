package main

import (
	"crypto/rand"
	"encoding/hex"
)

// newKey returns a random idempotency key. A job gets one when it is
// enqueued, before anything is sent, and keeps it: every create of that
// job, in any run, carries the same key, so the API can tell a resend from
// new work.
func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	return "mj-" + hex.EncodeToString(b[:])
}
