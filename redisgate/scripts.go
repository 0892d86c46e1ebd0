// The scripts: the Lua that reads and writes a scope's hash atomically.

package redisgate

import "github.com/redis/go-redis/v9"

// The scripts share one prelude, which reads the scope's hash and ages its
// sends in flight, and one save function, which writes the hash back with
// its expiry. Every script takes KEYS[1], the scope's hash, KEYS[2], its
// pace's (in the same hash slot: the take script reads only whether it
// exists), KEYS[3], its first contact's (the take script's alone), and
// ARGV[1],
// now; ARGV[2], the in-flight lifetime; ARGV[3], the expiry margin;
// ARGV[4], the horizon; ARGV[5], the hold this process knows of the scope
// (0: none), which the prelude sets if it is later than the hash's: all in
// Unix milliseconds or milliseconds. The hash's fields mirror heed's
// in-memory gate:
//
//	u  hold: nothing is sent before it
//	k  1 while a quota is known, until r
//	a  sends that may still be admitted before r
//	r  the quota's reset
//	m  the lowest remaining published in this window
//	s  sends in flight when m was published, not yet answered
//	b  the newer in-flight bucket: the sends admitted in [b, b+1) lifetimes
//	n  sends in flight admitted in bucket b
//	o  sends in flight admitted in bucket b-1
//
// and those of the inferred quota (heed.WithInferredQuota):
//
//	e  the current episode's number
//	t  its reopen; 0: no episode is measured
//	x  sends admitted in it
//	v  of those, answered and served
//	h  when the hold that ends it was set: its throttle; 0: none yet
//	l  the last measured episode's served sends; 0: none
//	p  the time from its reopen to the next
//	c  the learned window capacity S; 0: none
//	w  the learned window P
//	q  predicted windows since S was learned
//	g  how many more than S a probe admits
//
// Every field is read as absent (0) unless it is a whole number in its
// range: a time (u, r, t, h) from 0 to the horizon ahead of now, a period
// (p, w) from 0 to the horizon, a bucket no later than the horizon ahead,
// k 0 or 1, a count from 0 (a and m from -maxc) to maxc, 10^15. A field
// read as absent, a key that is not a hash, or a key without an expiry or
// with one past the horizon is written back (dirty), so every script
// repairs the hash it reads and leaves it an expiry.
//
// While an episode is measured, the hash lives until two periods (the
// last measured, the learned, its own up to the hold that ends it, or a
// second, whichever is longest) past its start: a throttle later than that
// would not agree with the last. No
// hash lives longer than the horizon.
const prelude = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local life = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local horizon = tonumber(ARGV[4])
local ahead = now + horizon
local maxc = 1e15
local dirty = false -- the hash must be written back
local f = redis.pcall('HMGET', key, 'u', 'k', 'a', 'r', 'm', 's', 'b', 'n', 'o',
  'e', 't', 'x', 'v', 'l', 'p', 'c', 'w', 'q', 'g', 'h')
if f.err then
  -- Not a hash: replaced.
  redis.call('DEL', key)
  f = {}
  dirty = true
end
-- field returns the i-th field, or 0 when it is absent or not a whole
-- number from lo to hi.
local function field(i, lo, hi)
  local x = tonumber(f[i])
  if x == nil or x ~= x or x < lo or x > hi or x ~= math.floor(x) then
    if f[i] then dirty = true end
    return 0
  end
  return x
end
local u = field(1, 0, ahead)
local k = field(2, 0, 1)
local a = field(3, -maxc, maxc)
local r = field(4, 0, ahead)
local m = field(5, -maxc, maxc)
local s = field(6, 0, maxc)
local b = field(7, 0, math.floor(ahead / life))
local n = field(8, 0, maxc)
local o = field(9, 0, maxc)
local e = field(10, 0, maxc)
local t = field(11, 0, ahead)
local x = field(12, 0, maxc)
local v = field(13, 0, maxc)
local l = field(14, 0, maxc)
local p = field(15, 0, horizon)
local c = field(16, 0, maxc)
local w = field(17, 0, horizon)
local q = field(18, 0, maxc)
local g = field(19, 0, maxc)
local h = field(20, 0, ahead)
local ttl = redis.call('PTTL', key)
if ttl == -1 or ttl > horizon then
  dirty = true
end
-- keep returns the time until which the hash says something.
local function keep()
  local till = u
  if k == 1 and r > till then till = r end
  if n > 0 then
    till = math.max(till, (b + 2) * life)
  elseif o > 0 then
    till = math.max(till, (b + 1) * life)
  end
  if t > 0 then
    till = math.max(till, t + 2 * math.max(p, w, u - t, 1000))
  end
  return till
end
-- A hash that says nothing any more is forgotten, whether or not it has
-- expired yet: its expiry has a margin.
if keep() <= now then
  u, k, a, r, m, s, b, n, o = 0, 0, 0, 0, 0, 0, 0, 0, 0
  t, x, v, l, p, c, w, q, g, h = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
end
-- A send counts in flight while its bucket is b or b-1: a process that
-- dies mid-request leaks it for two lifetimes at most. A caller whose
-- clock is behind counts in the newest bucket.
local cur = math.floor(now / life)
if cur > b then
  if cur == b + 1 then o = n else o = 0 end
  n = 0
  b = cur
  if s > o then s = o end
end
-- hold extends the hold to to, at most the horizon ahead, if that is
-- later. The call that first holds the scope past the episode's reopen
-- is the throttle that ends the episode: h is its time.
local function hold(to)
  to = math.min(to, ahead)
  if to > u then
    if t > 0 and u <= t and to > t then
      h = now
    end
    u = to
    dirty = true
  end
end
hold(tonumber(ARGV[5]))
local function int(x)
  return string.format('%.0f', x)
end
local function save()
  local till = keep()
  if till <= now then
    redis.call('DEL', key)
    return
  end
  redis.call('HSET', key, 'u', int(u), 'k', int(k), 'a', int(a), 'r', int(r), 'm', int(m),
    's', int(s), 'b', int(b), 'n', int(n), 'o', int(o),
    'e', int(e), 't', int(t), 'x', int(x), 'v', int(v), 'l', int(l), 'p', int(p),
    'c', int(c), 'w', int(w), 'q', int(q), 'g', int(g), 'h', int(h))
  redis.call('PEXPIRE', key, int(math.min(till - now + margin, horizon)))
end
`

// notBeforeScript returns the hold or, when the published quota is spent,
// the quota's reset, if that is later.
var notBeforeScript = redis.NewScript(prelude + `
if dirty then save() end
if k == 1 and a <= 0 and r > u then
  return r
end
return u
`)

// holdScript extends the hold to ARGV[5] (the prelude does) and returns
// the hold.
var holdScript = redis.NewScript(prelude + `
if dirty then save() end
return u
`)

// takeScript admits one send and returns {0, its bucket, its episode}, or
// returns {the time to ask again, -1, 0}: heed's memGate.take, and the
// first contact (contact.go). ARGV[6] is rules.QuotaRecheck in
// milliseconds: while sends set against a spent quota are unanswered, one
// of them may give its send back, and the refused send asks again that
// soon rather than at the reset; a send the first contact refuses asks
// again as soon. ARGV[7] is 1 when the gate infers quotas, and ARGV[8] is
// rules.InferProbe. ARGV[9] is the first contact's most sends in flight (0:
// none), ARGV[10] its span and ARGV[11] its memory, in milliseconds;
// KEYS[3] keeps when it began. A refusal saves the
// hash only when it is dirty: its episode changed, or the prelude set it.
var takeScript = redis.NewScript(prelude + `
if u > now then
  if dirty then save() end
  return {u, -1, 0}
end
local infer = ARGV[7] == '1'
local probe = tonumber(ARGV[8])
local function episode(start)
  dirty = true
  e = e + 1
  t = start
  x = 0
  v = 0
  h = 0
  if c > 0 then q = q + 1 end
end
-- Two consecutive episodes show one window: the same sends served,
-- periods of a second or more within 5 % of each other.
local function agree(s1, p1, s2, p2)
  local lo, hi = math.min(p1, p2), math.max(p1, p2)
  return s1 > 0 and s1 == s2 and lo >= 1000 and 20 * (hi - lo) <= lo
end
-- measurement returns what an episode that served sends over per teaches
-- the next: itself when measured, nothing (0, 0) when not.
local function measurement(measured, served, per)
  if not measured then
    return 0, 0
  end
  return served, per
end
if infer then
  if u > t then
    -- A hold ended since the episode began: a throttle ended it.
    local served, per = v, u - t
    -- The episode measures the server's window only when the server's
    -- hold explains most of its period: the throttle came no later than
    -- halfway through it. Otherwise it is not a measurement.
    local measured = 2 * (h - t) <= per
    if t == 0 then
      l = 0
      p = 0
    elseif c > 0 and served >= c then
      -- Throttled after S served: the window served what it served, and
      -- the hold's end reopens.
      c = served
      g = 1
    elseif c > 0 then
      c = 0
      l, p = measurement(measured, served, per)
    else
      -- Nothing is learned while the scope has a shared pace: a herd
      -- paces it, and the pace tells a window from a token bucket that
      -- rounds its wait up to a second, which two episodes cannot.
      if measured and redis.call('EXISTS', KEYS[2]) == 0 and agree(l, p, served, per) then
        c = served
        w = math.max(per, p)
        q = 0
        g = 1
      end
      l, p = measurement(measured, served, per)
    end
    episode(u)
  elseif c > 0 and now >= t + w then
    -- The predicted window is over.
    local fin = t + w
    if x < c or now >= fin + w then
      -- Not saturated: forget.
      c = 0
      l = 0
      p = 0
      episode(now)
    else
      if q % probe == 0 and v > c then
        -- The probe was served: probe again, twice as far.
        c = v
        g = 2 * g
        q = probe - 1
      end
      episode(fin)
    end
  elseif t == 0 then
    -- A scope's first episode runs from its first send.
    t = now
    dirty = true
  end
end
-- First contact: for the span from the fleet's first send after the
-- scope was idle for the contact memory, at most ARGV[9] sends are in
-- flight; the others ask again ARGV[6] later. Every take past a hold
-- keeps the contact remembered; a known quota admits by itself. A start
-- that is not a time is a contact from now; one ahead of now (a clock
-- ahead) is now; one older than the horizon is over.
local contact = false
if tonumber(ARGV[9]) > 0 then
  local span = tonumber(ARGV[10])
  local got = redis.pcall('GET', KEYS[3])
  local since = nil
  if type(got) == 'string' then since = tonumber(got) end
  if since == nil or since ~= since or since ~= math.floor(since) or since < 0 or since > now then
    since = now
  elseif since < now - horizon then
    since = now - span
  end
  redis.call('SET', KEYS[3], int(since), 'PX', ARGV[11])
  contact = now < since + span
end
if k == 1 and r <= now then
  k = 0
end
if k == 1 then
  if a <= 0 then
    local rc = now + tonumber(ARGV[6])
    if dirty then save() end
    if s > 0 and rc < r then
      return {rc, -1, 0}
    end
    return {r, -1, 0}
  end
  a = a - 1
elseif infer and c > 0 then
  local lim = c
  if q % probe == 0 then lim = lim + g end
  if x >= lim then
    if dirty then save() end
    return {t + w, -1, 0}
  end
end
if contact and k ~= 1 and n + o >= tonumber(ARGV[9]) then
  if dirty then save() end
  return {now + tonumber(ARGV[6]), -1, 0}
end
n = n + 1
x = x + 1
save()
return {0, b, e}
`)

// doneScript records that a send admitted in bucket ARGV[6] (-1: none
// known) and episode ARGV[10] was answered, with the quota ARGV[8] sends
// left until ARGV[9] when ARGV[7] is 1, and served when ARGV[11] is 1:
// heed's memGate.done. The quota is taken within range: its remaining at
// most maxc either way, its reset at most the horizon ahead.
var doneScript = redis.NewScript(prelude + `
if ARGV[11] == '1' and tonumber(ARGV[10]) == e then
  v = v + 1
end
local tb = tonumber(ARGV[6])
if tb >= 0 then
  if tb == b and n > 0 then
    n = n - 1
  elseif tb == b - 1 and o > 0 then
    o = o - 1
  end
end
local inflight = n + o
local qr = math.max(-maxc, math.min(tonumber(ARGV[8]), maxc))
local qt = math.min(tonumber(ARGV[9]), ahead)
if ARGV[7] ~= '1' or qt <= now then
  if s > inflight then s = inflight end
  save()
  return 0
end
-- A published figure counts every send the server had served. The sends
-- still in flight when it arrives may come after it, so they are set
-- against it; when one of them answers with a higher figure, it was
-- served before, was counted already, and gives its send back.
local live = k == 1 and r > now
if not live or qr < m then
  if not live or qt < r then r = qt end
  k = 1
  m = qr
  s = inflight
  a = qr - inflight
  save()
  return 0
end
if s > 0 then
  s = s - 1
  a = a + 1
end
if qt < r then r = qt end
save()
return 0
`)
