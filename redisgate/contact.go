// The first contact: how a fleet meets a scope it has not sent to lately.

package redisgate

import (
	"time"

	"github.com/heed-go/heed/internal/rules"
)

const (
	// DefaultContactInFlight is the first contact's most sends in flight
	// without WithFirstContact.
	DefaultContactInFlight = 2
	// DefaultContactSpan is the first contact's span without
	// WithFirstContact.
	DefaultContactSpan = 250 * time.Millisecond
)

// contactKeep is how long a scope the fleet has sent nothing to is
// remembered: after that, its next send is a first contact again. It is
// as long as a gate keeps a pace that has not changed.
const contactKeep = rules.PaceKeep

// contact is the first contact's configuration: at most most sends in
// flight for span; most 0 turns it off.
type contact struct {
	most int64
	span time.Duration
}

// WithFirstContact sets how the fleet meets a scope it has sent nothing
// to for ten minutes: for span from the first send, the gate admits at
// most inFlight of the scope's sends in flight at once, fleet-wide, and the
// others wait for one to be answered (each asks again 10ms later). A fleet
// that starts together then finds a limit it does not know with a few
// sends, not with every process's herd at once; a hold the first refusal
// sets then stops the rest. A quota the server publishes admits by itself
// instead. Default: DefaultContactInFlight, 2, for DefaultContactSpan,
// 250ms; inFlight or span zero or less turns it off. Gates sharing a prefix
// should agree.
func WithFirstContact(inFlight int, span time.Duration) Option {
	return optionFunc(func(g *gate) {
		if inFlight <= 0 || span <= 0 {
			g.contact = contact{}
			return
		}
		g.contact = contact{most: int64(inFlight), span: ceilMilli(span)}
	})
}

// contactKey returns the name of scope's first contact: its hash's name,
// then ":contact". It holds, in Unix milliseconds, when the contact began,
// and expires contactKeep after the scope's last send.
func (g *gate) contactKey(scope string) string { return g.key(scope) + ":contact" }
