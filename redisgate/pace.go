// The shared pace: the state heed paces a scope by (heed.PaceGate), kept
// in Redis for every process of a fleet.

package redisgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heed-go/heed"
	"github.com/heed-go/heed/internal/rules"
)

var _ heed.PaceGate = (*gate)(nil)

// paceKey returns the name of scope's pace: its hash's name, then ":pace".
// No hash's name ends so, since every one ends with its scope's brace.
func (g *gate) paceKey(scope string) string { return g.key(scope) + ":pace" }

// paceTries bounds how often Pace reads the state again when another
// process changed it under the update; after the first, each try waits a
// random time up to paceBackoff times the tries so far, so that writers
// that keep meeting fall out of step.
const (
	paceTries   = 16
	paceBackoff = 200 * time.Microsecond
)

// errPaceBusy is a pace that changed under every one of an update's tries.
var errPaceBusy = errors.New("the pace changed under every try")

// Pace replaces scope's pace with what update returns for it, if no other
// call changed it meanwhile, and otherwise calls update again on what it
// has become, up to paceTries times: a hash of two fields, v, a version
// that every write increments, and s, the state, which expires rules.PaceKeep
// after its last change (at most the horizon). A key that is not such a
// hash is read as no state, and replaced. An update that leaves the state
// as it was, or gives none for none, writes nothing: a read is one round
// trip. When Redis fails, Pace returns its error, and a Transport paces on
// its own copy.
func (g *gate) Pace(ctx context.Context, scope string, update func([]byte) []byte) error {
	key := g.paceKey(scope)
	keep := min(rules.PaceKeep, Horizon).Milliseconds()
	// Version -1 is never a key's: the first call reads.
	version, state, write := int64(-1), []byte(nil), []byte(nil)
	for try := range paceTries + 1 {
		if try > 1 {
			if err := rules.Sleep(ctx, rules.RandUpTo(time.Duration(try-1)*paceBackoff)); err != nil {
				return fmt.Errorf("redisgate: pace %q: %w", scope, err)
			}
		}
		if version >= 0 {
			next := update(state)
			if state == nil && next == nil || state != nil && next != nil && bytes.Equal(next, state) {
				return nil // nothing to write, nor to delete
			}
			write = next
		}
		res, err := call(g, ctx, "pace", scope, func(ctx context.Context) ([]any, error) {
			return g.runKey(ctx, paceScript, key, []any{version, write, keep}).Slice()
		})
		if err != nil {
			return err
		}
		if len(res) == 0 {
			return fmt.Errorf("redisgate: pace %q: unexpected reply %v", scope, res)
		}
		if ok, _ := res[0].(int64); ok == 1 {
			return nil
		}
		version, state = paceRead(res[1:])
	}
	return fmt.Errorf("redisgate: pace %q: %w", scope, errPaceBusy)
}

// paceRead reads a version and a state, as HMGET or paceScript return
// them: no version, or no state, is none.
func paceRead(f []any) (int64, []byte) {
	if len(f) < 2 {
		return 0, nil
	}
	vs, _ := f[0].(string)
	s, _ := f[1].(string)
	var v int64
	if _, err := fmt.Sscan(vs, &v); err != nil || v <= 0 || s == "" {
		return 0, nil
	}
	return v, []byte(s)
}

// paceScript writes ARGV[2], the state, as version ARGV[1] + 1 and
// returns {1} if the key's version is ARGV[1] (0: none, or not a pace);
// an empty state deletes the key. Otherwise, and always for version -1,
// it returns {0, version, state}. The key expires ARGV[3] milliseconds
// after the write.
var paceScript = redis.NewScript(`
local key = KEYS[1]
local f = redis.pcall('HMGET', key, 'v', 's')
local v = 0
local bad = false -- not a pace: replaced on a write
if f.err then
  f = {}
  bad = true
else
  v = tonumber(f[1]) or 0
  if v ~= v or v ~= math.floor(v) or v < 0 or v > 1e15 or type(f[2]) ~= 'string' or f[2] == '' then
    v = 0
    bad = true
  end
end
if v ~= tonumber(ARGV[1]) then
  if v == 0 then return {0, '0', ''} end
  return {0, string.format('%.0f', v), f[2]}
end
if ARGV[2] == '' then
  redis.call('DEL', key)
  return {1}
end
if bad then redis.call('DEL', key) end
redis.call('HSET', key, 'v', string.format('%.0f', v + 1), 's', ARGV[2])
redis.call('PEXPIRE', key, ARGV[3])
return {1}
`)

// runKey runs script on key with args, by its hash, or by its source when
// Redis lacks it (see run).
func (g *gate) runKey(ctx context.Context, script *redis.Script, key string, args []any) *redis.Cmd {
	keys := []string{key}
	cmd := script.EvalSha(ctx, g.client, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		g.local.lost.Store(true)
		return script.Eval(ctx, g.client, keys, args...)
	}
	return cmd
}
