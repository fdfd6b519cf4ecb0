-- Sluice: one decision, atomically, on Redis time. A port of core's Engine (docs/semantics.md):
-- it must compute the same next state; the figures are rebuilt in Java from what it returns.
--
-- KEYS[1]  the key's state: "<layout>|slot,slot,..."; absent means the initial state
-- KEYS[2]  a group's decision only (core's GroupLimits): the group's parent state; the last
--          limit is the parent's, the others (assured, ceilings) the key's
-- ARGV     op, now (microseconds, or -1: TIME), layout, expiry padding (ms; 0 unless time is
--          passed in), then per limit: kind, capacity, window, penalty, quantum, scale; then the
--          count of grains a lease asks for or a release gives back (1 otherwise); then, for a
--          group, the reserve (the parent's steps only assured traffic may fill)
-- returns  { now, slot, slot, ... }   the clock reading and the state before the operation (for a
--          group, the key's slots then the parent's)
--
-- The constants, the slots and the arguments are those of dev.sluice.spi.StoreProtocol (a test
-- compares them). Numbers are doubles: every value stays below 2^53 (times in microseconds; a
-- bucket's capacity at most 2^51 steps, plus its penalty at most 2^52). "None" is -2^53.
--
-- Laid out as core is: one section per limit kind, in the order of core's BucketRules,
-- FixedWindowRules and SlidingWindowRules, each with initialize, fits, charge, fill, penalize and
-- reset_after; then the operation across a key's limits (core's Engine.decide).
local NONE = -9007199254740992
local MAXT = 9007199254740991
local BIG = 4503599627370496
local TRY, CHECK, FILL, RESERVE, LEASE, RELEASE = 0, 1, 2, 3, 4, 5
local BUCKET, FIXED, SLIDING = 0, 1, 2
local ARGS = 6

local function add(a, b)
  local r = a + b
  if r > MAXT then return MAXT end
  return r
end
-- The common case, one bucket of scale 1 without a penalty, asked to admit or to check: the
-- same decision and state as the general path below (and the SQL function's fast path), decided
-- before the script defines anything else, since Redis runs the whole chunk on every call.
if ARGV[3] == 'b' and tonumber(ARGV[1]) <= CHECK and ARGV[8] == '0' then
  local now = tonumber(ARGV[2])
  if now < 0 then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local e = NONE
  local stored = redis.call('GET', KEYS[1])
  if stored and string.sub(stored, 1, 2) == 'b|' then
    e = tonumber(string.sub(stored, 3)) or NONE
  end
  local b = 0
  if e ~= NONE and e > now then
    b = e - now
    if b > BIG then b = BIG end
  end
  local filled = add(b, tonumber(ARGV[9]))
  if tonumber(ARGV[1]) == TRY and filled <= tonumber(ARGV[6]) then
    local nx = add(now, filled)
    if nx ~= e then
      redis.call('SET', KEYS[1], 'b|' .. string.format('%.0f', nx),
                 'PX', math.ceil(filled / 1000) + tonumber(ARGV[4]))
    end
  end
  return {now, e}
end

local function pdiff(a, b)
  if a <= b then return 0 end
  return a - b
end
local function blocked_for(b, now)
  if b == NONE then return 0 end
  return pdiff(b, now)
end

-- bucket (BucketRules) -------------------------------------------------------------
-- State [E] (scale 1) or [E, R], counted in steps of 1/sc tick:
-- backlog = sc * (E - now) - R while E > now, else 0, at most BIG.
local function backlog(l, s, o, now)
  local e = s[o]
  if e == NONE or e <= now then return 0 end
  local x = (e - now) * l.sc
  if x > BIG then return BIG end
  if l.sc == 1 then return x end
  return x - math.min(s[o + 1], l.sc - 1)
end
local function steps(l, ticks)
  local x = ticks * l.sc
  if x > BIG then return BIG end
  return x
end
local function ticks_up(l, st)
  if l.sc == 1 then return st end
  local t = math.floor(st / l.sc)
  if t * l.sc > st then t = t - 1 end
  if t * l.sc < st then t = t + 1 end
  return t
end
local function hold(l, nx, o, now, st)
  local t = ticks_up(l, st)
  nx[o] = add(now, t)
  if l.sc ~= 1 then nx[o + 1] = t * l.sc - st end
end

local bucket = {}
function bucket.initialize(l, s, o)
  s[o] = NONE
  if l.sc ~= 1 then s[o + 1] = 0 end
end
function bucket.fits(l, s, o, now, q)
  return add(backlog(l, s, o, now), q) <= l.cap
end
function bucket.charge(l, s, o, now, q, departure, nx)
  hold(l, nx, o, now, add(math.max(backlog(l, s, o, now), steps(l, departure - now)), q))
end
function bucket.fill(l, s, o, now, q, nx)
  local b = backlog(l, s, o, now)
  local filled = add(b, q)
  hold(l, nx, o, now, math.max(b, math.min(l.cap, filled)))
  return filled >= l.cap
end
function bucket.penalize(l, s, o, now, nx)
  if backlog(l, s, o, now) <= l.cap then hold(l, nx, o, now, l.cap + l.pen) end
end
function bucket.reset_after(l, s, o, now)
  return ticks_up(l, backlog(l, s, o, now))
end
-- leases (Engine.lease): whole grains of q steps that fit; take them; give grains back
function bucket.grains_that_fit(l, s, o, now, q)
  local room = l.cap - backlog(l, s, o, now)
  if room <= 0 then return 0 end
  local n = math.floor(room / q)
  if n * q > room then n = n - 1 end
  if (n + 1) * q <= room then n = n + 1 end
  return n
end
function bucket.take(l, s, o, now, st, nx)
  hold(l, nx, o, now, backlog(l, s, o, now) + st)
end
function bucket.give_back(l, s, o, now, grains, q, nx)
  local b = backlog(l, s, o, now)
  if b == 0 or b > l.cap then return end
  local back = grains * q
  if back >= b then back = b end
  hold(l, nx, o, now, b - back)
end

-- fixed window (FixedWindowRules) ----------------------------------------------------
-- State [start, count, blockedUntil].
local function fixed_expired(l, start, now)
  return start == NONE or now >= add(start, l.w)
end
local function fixed_count(l, s, o, now)
  if fixed_expired(l, s[o], now) then return 0 end
  return s[o + 1]
end

local fixed = {}
function fixed.initialize(l, s, o)
  s[o], s[o + 1], s[o + 2] = NONE, 0, NONE
end
function fixed.fits(l, s, o, now, q)
  return blocked_for(s[o + 2], now) == 0 and fixed_count(l, s, o, now) + q <= l.cap
end
function fixed.charge(l, s, o, now, q, departure, nx)
  if fixed_expired(l, s[o], now) then
    nx[o], nx[o + 1] = now, q
  else
    nx[o + 1] = s[o + 1] + q
  end
end
function fixed.fill(l, s, o, now, q, nx)
  local count = fixed_count(l, s, o, now)
  if fixed_expired(l, s[o], now) then nx[o] = now end
  nx[o + 1] = math.max(count, math.min(l.cap, count + q))
  return count + q >= l.cap
end
function fixed.penalize(l, s, o, now, nx)
  if blocked_for(s[o + 2], now) == 0 then nx[o + 2] = add(now, l.pen) end
end
function fixed.reset_after(l, s, o, now)
  local ends = 0
  if fixed_count(l, s, o, now) > 0 then ends = pdiff(add(s[o], l.w), now) end
  return math.max(blocked_for(s[o + 2], now), ends)
end

-- sliding window (SlidingWindowRules) ------------------------------------------------
-- State [start, previous, current, blockedUntil], start aligned to the window.
local function aligned(now, w)
  local q = math.floor(now / w)
  if q * w > now then q = q - 1 elseif (q + 1) * w <= now then q = q + 1 end
  return q * w
end
local function roll(l, s, o, now, out, p)
  local start = s[o]
  local k = aligned(now, l.w)
  if start == NONE or k > add(start, l.w) then
    out[p], out[p + 1], out[p + 2] = k, 0, 0
  elseif k == add(start, l.w) then
    out[p], out[p + 1], out[p + 2] = k, s[o + 2], 0
  else
    out[p], out[p + 1], out[p + 2] = start, s[o + 1], s[o + 2]
  end
end
-- the estimate plus q in exactly core's order of double operations
local function sliding_estimate(l, s, o, now, q)
  local start = s[o]
  local k = aligned(now, l.w)
  local prev, curr
  if start == NONE or k > add(start, l.w) then
    return q
  elseif k == add(start, l.w) then
    prev, curr, start = s[o + 2], 0, k
  else
    prev, curr = s[o + 1], s[o + 2]
  end
  local elapsed = math.max(0, math.min(l.w, now - start))
  local weighted = prev * (l.w - elapsed) / l.w
  return weighted + (curr + q)
end

local sliding = {}
function sliding.initialize(l, s, o)
  s[o], s[o + 1], s[o + 2], s[o + 3] = NONE, 0, 0, NONE
end
function sliding.fits(l, s, o, now, q)
  return blocked_for(s[o + 3], now) == 0 and sliding_estimate(l, s, o, now, q) <= l.cap
end
function sliding.charge(l, s, o, now, q, departure, nx)
  roll(l, s, o, now, nx, o)
  nx[o + 2] = nx[o + 2] + q
end
function sliding.fill(l, s, o, now, q, nx)
  local est = sliding_estimate(l, s, o, now, q)
  roll(l, s, o, now, nx, o)
  nx[o + 2] = math.max(nx[o + 2], math.min(l.cap, nx[o + 2] + q))
  return (not (est <= l.cap)) or est >= l.cap
end
function sliding.penalize(l, s, o, now, nx)
  if blocked_for(s[o + 3], now) == 0 then nx[o + 3] = add(now, l.pen) end
end
function sliding.reset_after(l, s, o, now)
  local r = {}
  roll(l, s, o, now, r, 1)
  local stop = now
  if r[3] > 0 then stop = add(r[1], 2 * l.w) elseif r[2] > 0 then stop = add(r[1], l.w) end
  return math.max(blocked_for(s[o + 3], now), pdiff(stop, now))
end

local RULES = {[BUCKET] = bucket, [FIXED] = fixed, [SLIDING] = sliding}
local SLOTS = {[FIXED] = 3, [SLIDING] = 4}

-- the operation across a key's limits (Engine.decide) ---------------------------------
local op = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local layout = ARGV[3]
local pad = tonumber(ARGV[4])
local limits = {}
local slots = 0
local a = 5
for i = 1, #layout do
  local l = {kind = tonumber(ARGV[a]), cap = tonumber(ARGV[a + 1]), w = tonumber(ARGV[a + 2]),
             pen = tonumber(ARGV[a + 3]), q = tonumber(ARGV[a + 4]), sc = tonumber(ARGV[a + 5])}
  l.rules = RULES[l.kind]
  if l.kind == BUCKET then
    l.slots = (l.sc == 1) and 1 or 2
  else
    l.slots = SLOTS[l.kind]
  end
  l.o = slots + 1
  slots = slots + l.slots
  limits[i] = l
  a = a + ARGS
end
local count = tonumber(ARGV[a])

-- a state: the slots of limits first..last, kept under one key with their layout letters
local function load(key, first, last, s)
  local lay = string.sub(layout, first, last)
  local from, to = limits[first].o, limits[last].o + limits[last].slots - 1
  local stored = redis.call('GET', key)
  local bar = stored and string.find(stored, '|', 1, true)
  local vals = {}
  if bar and string.sub(stored, 1, bar - 1) == lay then
    for v in string.gmatch(string.sub(stored, bar + 1), '[^,]+') do vals[#vals + 1] = tonumber(v) end
  end
  if #vals == to - from + 1 then
    for i = from, to do s[i] = vals[i - from + 1] end
  else
    for i = first, last do limits[i].rules.initialize(limits[i], s, limits[i].o) end
  end
end
-- writes the slots of limits first..last if they changed; deletes the key once they hold nothing
local function save(key, first, last, s, nx)
  local from, to = limits[first].o, limits[last].o + limits[last].slots - 1
  local changed = false
  for i = from, to do
    if nx[i] ~= s[i] then changed = true end
  end
  if not changed then return end
  local idle = 0
  for i = first, last do
    local l = limits[i]
    idle = math.max(idle, l.rules.reset_after(l, nx, l.o, now))
  end
  if idle <= 0 then
    redis.call('DEL', key)
  else
    local parts = {}
    for i = from, to do parts[#parts + 1] = string.format('%.0f', nx[i]) end
    redis.call('SET', key, string.sub(layout, first, last) .. '|' .. table.concat(parts, ','),
               'PX', math.ceil(idle / 1000) + pad)
  end
end

local n = #limits
local s = {}
local nx = {}
if #KEYS == 2 then
  -- a group (GroupLimits.decide): the assured path charges every limit when all of them fit;
  -- otherwise the borrowed path charges the ceilings and the parent when the ceilings fit and
  -- the parent holds the cost below its capacity minus the reserve
  load(KEYS[1], 1, n - 1, s)
  load(KEYS[2], n, n, s)
  for i = 1, slots do nx[i] = s[i] end
  local reserve = tonumber(ARGV[a + 1])
  local p = limits[n]
  local ceilings = true
  for i = 2, n - 1 do
    local l = limits[i]
    ceilings = ceilings and bucket.fits(l, s, l.o, now, l.q)
  end
  local assured = bucket.fits(limits[1], s, limits[1].o, now, limits[1].q) and ceilings
    and bucket.fits(p, s, p.o, now, p.q)
  local borrowed = (not assured) and ceilings
    and add(backlog(p, s, p.o, now), p.q) <= p.cap - reserve
  if op == TRY and (assured or borrowed) then
    local first = 1
    if borrowed then first = 2 end
    for i = first, n do
      local l = limits[i]
      bucket.charge(l, s, l.o, now, l.q, now, nx)
    end
  end
  save(KEYS[1], 1, n - 1, s, nx)
  save(KEYS[2], n, n, s, nx)
  local out = {now}
  for i = 1, slots do out[i + 1] = s[i] end
  return out
end

load(KEYS[1], 1, n, s)
for i = 1, slots do nx[i] = s[i] end
if op == LEASE or op == RELEASE then
  -- Engine.lease: buckets only; as many grains as every limit holds room for, or given back
  if count > 0 then
    local granted = count
    if op == LEASE then
      for _, l in ipairs(limits) do
        granted = math.min(granted, bucket.grains_that_fit(l, s, l.o, now, l.q))
      end
    end
    if granted > 0 then
      for _, l in ipairs(limits) do
        if op == LEASE then
          bucket.take(l, s, l.o, now, granted * l.q, nx)
        else
          bucket.give_back(l, s, l.o, now, count, l.q, nx)
        end
      end
    end
  end
else
  local departure = now
  if op == RESERVE then
    for _, l in ipairs(limits) do departure = math.max(departure, s[l.o]) end
  end
  local ok = {}
  local all = true
  for i, l in ipairs(limits) do
    if op == RESERVE then
      ok[i] = add(steps(l, departure - now), l.q) <= l.cap
    else
      ok[i] = l.rules.fits(l, s, l.o, now, l.q)
    end
    all = all and ok[i]
  end
  for i, l in ipairs(limits) do
    if op == FILL then
      if l.rules.fill(l, s, l.o, now, l.q, nx) and l.q <= l.cap and l.pen > 0 then
        l.rules.penalize(l, s, l.o, now, nx)
      end
    elseif op ~= CHECK then
      if all then
        local dep = now
        if op == RESERVE then dep = departure end
        l.rules.charge(l, s, l.o, now, l.q, dep, nx)
      elseif (not ok[i]) and l.q <= l.cap and l.pen > 0 then
        l.rules.penalize(l, s, l.o, now, nx)
      end
    end
  end
end
save(KEYS[1], 1, n, s, nx)

local out = {now}
for i = 1, slots do out[i + 1] = s[i] end
return out
