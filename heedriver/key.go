// The key a job's idempotency keys are derived from: the same on every
// attempt, snooze and redelivery of one job, different in every other.

package heedriver

import (
	"strconv"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// jobKey returns the base of the idempotency keys of job's requests: its
// kind, ID and creation time. The ID alone could repeat: SQLite reuses the
// highest row ID once River's cleaner has deleted that row, and two
// databases number their jobs alike. The creation time, stored once at
// insert and read back unchanged on every fetch, tells such jobs apart.
func jobKey(job *rivertype.JobRow) string {
	return "river\x00" + job.Kind + "\x00" + strconv.FormatInt(job.ID, 10) +
		"\x00" + job.CreatedAt.UTC().Format(time.RFC3339Nano)
}
