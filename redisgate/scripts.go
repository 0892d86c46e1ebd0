package redisgate

import "github.com/redis/go-redis/v9"

// The scripts share one prelude, which reads the scope's hash and ages its
// sends in flight, and one save function, which writes the hash back with
// its expiry. Every script takes KEYS[1], the scope's hash, and ARGV[1],
// now; ARGV[2], the in-flight lifetime; ARGV[3], the expiry margin: all in
// Unix milliseconds. The hash's fields mirror heed's in-memory gate:
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
// While an episode is measured, the hash lives until two periods (the
// last measured, the learned, or a second, whichever is longest) past its
// start: a throttle later than that would not agree with the last.
const prelude = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local life = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local f = redis.call('HMGET', key, 'u', 'k', 'a', 'r', 'm', 's', 'b', 'n', 'o',
  'e', 't', 'x', 'v', 'l', 'p', 'c', 'w', 'q', 'g', 'h')
local u = tonumber(f[1]) or 0
local k = tonumber(f[2]) or 0
local a = tonumber(f[3]) or 0
local r = tonumber(f[4]) or 0
local m = tonumber(f[5]) or 0
local s = tonumber(f[6]) or 0
local b = tonumber(f[7]) or 0
local n = tonumber(f[8]) or 0
local o = tonumber(f[9]) or 0
local e = tonumber(f[10]) or 0
local t = tonumber(f[11]) or 0
local x = tonumber(f[12]) or 0
local v = tonumber(f[13]) or 0
local l = tonumber(f[14]) or 0
local p = tonumber(f[15]) or 0
local c = tonumber(f[16]) or 0
local w = tonumber(f[17]) or 0
local q = tonumber(f[18]) or 0
local g = tonumber(f[19]) or 0
local h = tonumber(f[20]) or 0
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
    till = math.max(till, t + 2 * math.max(p, w, 1000))
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
  redis.call('PEXPIRE', key, int(till - now + margin))
end
`

// holdScript extends the hold to ARGV[4] if that is later, and returns the
// hold. The call that first holds the scope past the episode's reopen is
// the throttle that ends the episode: h is its time.
var holdScript = redis.NewScript(prelude + `
local hold = tonumber(ARGV[4])
if hold > u then
  if t > 0 and u <= t and hold > t then
    h = now
  end
  u = hold
  save()
end
return u
`)

// takeScript admits one send and returns {0, its bucket, its episode}, or
// returns {the time to ask again, -1, 0}: heed's memGate.take. ARGV[4] is
// heed.QuotaRecheck in milliseconds: while sends set against a spent quota
// are unanswered, one of them may give its send back, and the refused send
// asks again that soon rather than at the reset. ARGV[5] is 1 when the
// gate infers quotas, and ARGV[6] is heed.InferProbe.
var takeScript = redis.NewScript(prelude + `
if u > now then
  return {u, -1, 0}
end
local infer = ARGV[5] == '1'
local probe = tonumber(ARGV[6])
local dirty = false -- the episode changed: a refusal saves it too
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
      if measured and agree(l, p, served, per) then
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
if k == 1 and r <= now then
  k = 0
end
if k == 1 then
  if a <= 0 then
    local rc = now + tonumber(ARGV[4])
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
n = n + 1
x = x + 1
save()
return {0, b, e}
`)

// doneScript records that a send admitted in bucket ARGV[4] (-1: none
// known) and episode ARGV[8] was answered, with the quota ARGV[6] sends
// left until ARGV[7] when ARGV[5] is 1, and served when ARGV[9] is 1:
// heed's memGate.done.
var doneScript = redis.NewScript(prelude + `
if ARGV[9] == '1' and tonumber(ARGV[8]) == e then
  v = v + 1
end
local tb = tonumber(ARGV[4])
if tb >= 0 then
  if tb == b and n > 0 then
    n = n - 1
  elseif tb == b - 1 and o > 0 then
    o = o - 1
  end
end
local inflight = n + o
local qr = tonumber(ARGV[6])
local qt = tonumber(ARGV[7])
if ARGV[5] ~= '1' or qt <= now then
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
