-- Sluice: one decision, atomically, on Redis time. A port of core's Engine (docs/semantics.md):
-- it must compute the same next state; the figures are rebuilt in Java from what it returns.
--
-- KEYS[1]  the key's state (encode/decode below); absent means the initial state
-- KEYS[2]  a group's decision only (core's GroupLimits): the group's parent state; the last
--          limit is the parent's, the others (assured, ceilings) the key's
-- ARGV     the header (ARGV_*: op, now in microseconds or -1 for TIME, layout, expiry padding in
--          ms), then per limit ARGS_PER_LIMIT arguments (ARG_*: kind, capacity, window, penalty, quantum,
--          scale), then AFTER_LIMITS_*: the count of grains a lease asks for or a release gives
--          back (1 otherwise) and, for a group, the reserve (the parent's steps only assured
--          traffic may fill)
-- returns  { now, slot, slot, ... }   the clock reading and the state before the operation (for a
--          group, the key's slots then the parent's)
--
-- Every number below is named once, with the name and value of dev.sluice.spi.StoreProtocol:
-- codes, markers, bounds, ARGV and argument offsets, slot offsets and slot counts. Offsets count
-- from 0, as Java's; Lua's tables count from 1, hence ARGV[1 + ...] and s[o + ...] with o the
-- 1-based index of a limit's first slot. RedisProtocolTest compares every name with Java's.
-- Numbers are doubles: every value stays below 2^53 (times in microseconds; a bucket's capacity
-- at most 2^51 steps, plus its penalty at most 2^52). "None" is -2^53.
--
-- Laid out as core is: the bucket's rule first (BucketRules: backlog, admission, the state it
-- holds), used by every path, the fast one included; then one section per limit kind, in the
-- order of core's BucketRules, FixedWindowRules and SlidingWindowRules, each with initialize,
-- fits, charge, fill, penalize and reset_after; then the operation across a key's limits (core's
-- Engine.decide).
local SCRIPT_NONE = -9007199254740992
local SCRIPT_MAX = 9007199254740991
local SCRIPT_BIG = 4503599627370496
local TRY_ACQUIRE, CHECK, FILL_UP, RESERVE, LEASE, RELEASE = 0, 1, 2, 3, 4, 5
local BUCKET, FIXED_WINDOW, SLIDING_WINDOW = 0, 1, 2
local ARGV_OP, ARGV_NOW, ARGV_LAYOUT, ARGV_EXPIRY_PADDING, ARGV_HEADER = 0, 1, 2, 3, 4
local ARG_KIND, ARG_CAPACITY, ARG_WINDOW, ARG_PENALTY, ARG_QUANTUM, ARG_SCALE = 0, 1, 2, 3, 4, 5
local ARGS_PER_LIMIT = 6
local AFTER_LIMITS_COUNT, AFTER_LIMITS_RESERVE = 0, 1
local BUCKET_EMPTY_AT, BUCKET_REMAINDER = 0, 1
local FIXED_START, FIXED_COUNT, FIXED_BLOCKED_UNTIL = 0, 1, 2
local SLIDING_START, SLIDING_PREVIOUS, SLIDING_CURRENT, SLIDING_BLOCKED_UNTIL = 0, 1, 2, 3
local BUCKET_SLOTS, SCALED_BUCKET_SLOTS, FIXED_WINDOW_SLOTS, SLIDING_WINDOW_SLOTS = 1, 2, 3, 4

local function add(a, b)
  local r = a + b
  if r > SCRIPT_MAX then return SCRIPT_MAX end
  return r
end

-- the bucket's rule (BucketRules), the one copy in this script ---------------------------------
-- A bucket empty at E (a tick; R the steps rounding E up added, 0 at scale 1) holds, at now,
-- sc * (E - now) - R steps while E > now, else 0, at most SCRIPT_BIG; it admits q more steps
-- when they fit below its capacity; holding st steps at now, it is empty at now + st / sc ticks
-- rounded up, with R the steps that rounding added.
local function bucket_backlog(e, r, sc, now)
  if e == SCRIPT_NONE or e <= now then return 0 end
  local x = (e - now) * sc
  if x > SCRIPT_BIG then return SCRIPT_BIG end
  if sc == 1 then return x end
  return x - math.min(r, sc - 1)
end
local function bucket_admits(b, q, cap)
  return add(b, q) <= cap
end
local function ticks_up(sc, st)
  if sc == 1 then return st end
  local t = math.floor(st / sc)
  if t * sc > st then t = t - 1 end
  if t * sc < st then t = t + 1 end
  return t
end

-- The common case, one bucket of scale 1 without a penalty, asked to admit or to check, decided
-- by the rule above before the script defines anything else (Redis runs the whole chunk on every
-- call): the same decision and state as the general path below.
local op = tonumber(ARGV[1 + ARGV_OP])
local first = 1 + ARGV_HEADER
if ARGV[1 + ARGV_LAYOUT] == 'b' and op <= CHECK and ARGV[first + ARG_PENALTY] == '0' then
  local now = tonumber(ARGV[1 + ARGV_NOW])
  if now < 0 then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local e = SCRIPT_NONE
  local stored = redis.call('GET', KEYS[1])
  if stored then
    local c = string.sub(stored, 1, 1)
    if c == 'b' and string.sub(stored, 2, 2) == '|' then
      e = tonumber(string.sub(stored, 3)) or SCRIPT_NONE   -- the text form of earlier builds
    elseif c >= '0' and c <= '9' then
      e = tonumber(stored) or SCRIPT_NONE
    end
  end
  local b = bucket_backlog(e, 0, 1, now)
  local q = tonumber(ARGV[first + ARG_QUANTUM])
  if op == TRY_ACQUIRE and bucket_admits(b, q, tonumber(ARGV[first + ARG_CAPACITY])) then
    local st = add(b, q)
    local nx = add(now, ticks_up(1, st))
    if nx ~= e then
      redis.call('SET', KEYS[1], string.format('%.0f', nx),
                 'PX', math.ceil(st / 1000) + tonumber(ARGV[1 + ARGV_EXPIRY_PADDING]))
    end
  end
  return {now, e}
end

local function pdiff(a, b)
  if a <= b then return 0 end
  return a - b
end
local function blocked_for(b, now)
  if b == SCRIPT_NONE then return 0 end
  return pdiff(b, now)
end

-- bucket (BucketRules) -------------------------------------------------------------
-- State [E] (scale 1) or [E, R]: the rule above, on a limit's slots.
local function backlog(l, s, o, now)
  local r = 0
  if l.sc ~= 1 then r = s[o + BUCKET_REMAINDER] end
  return bucket_backlog(s[o + BUCKET_EMPTY_AT], r, l.sc, now)
end
local function steps(l, ticks)
  local x = ticks * l.sc
  if x > SCRIPT_BIG then return SCRIPT_BIG end
  return x
end
local function hold(l, nx, o, now, st)
  local t = ticks_up(l.sc, st)
  nx[o + BUCKET_EMPTY_AT] = add(now, t)
  if l.sc ~= 1 then nx[o + BUCKET_REMAINDER] = t * l.sc - st end
end

local bucket = {}
function bucket.initialize(l, s, o)
  s[o + BUCKET_EMPTY_AT] = SCRIPT_NONE
  if l.sc ~= 1 then s[o + BUCKET_REMAINDER] = 0 end
end
function bucket.fits(l, s, o, now, q)
  return bucket_admits(backlog(l, s, o, now), q, l.cap)
end
function bucket.charge(l, s, o, now, q, nx)
  hold(l, nx, o, now, add(backlog(l, s, o, now), q))
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
  return ticks_up(l.sc, backlog(l, s, o, now))
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
  return start == SCRIPT_NONE or now >= add(start, l.w)
end
local function fixed_count(l, s, o, now)
  if fixed_expired(l, s[o + FIXED_START], now) then return 0 end
  return s[o + FIXED_COUNT]
end

local fixed = {}
-- a window's penalty: the block's end, unless a block is in force (core's Rules.block)
local function block(l, s, o, slot, now, nx)
  if blocked_for(s[o + slot], now) == 0 then nx[o + slot] = add(now, l.pen) end
end

function fixed.initialize(l, s, o)
  s[o + FIXED_START], s[o + FIXED_COUNT], s[o + FIXED_BLOCKED_UNTIL] = SCRIPT_NONE, 0, SCRIPT_NONE
end
function fixed.fits(l, s, o, now, q)
  return blocked_for(s[o + FIXED_BLOCKED_UNTIL], now) == 0 and fixed_count(l, s, o, now) + q <= l.cap
end
function fixed.charge(l, s, o, now, q, nx)
  if fixed_expired(l, s[o + FIXED_START], now) then
    nx[o + FIXED_START], nx[o + FIXED_COUNT] = now, q
  else
    nx[o + FIXED_COUNT] = s[o + FIXED_COUNT] + q
  end
end
function fixed.fill(l, s, o, now, q, nx)
  local count = fixed_count(l, s, o, now)
  if fixed_expired(l, s[o + FIXED_START], now) then nx[o + FIXED_START] = now end
  nx[o + FIXED_COUNT] = math.max(count, math.min(l.cap, count + q))
  return count + q >= l.cap
end
function fixed.penalize(l, s, o, now, nx)
  block(l, s, o, FIXED_BLOCKED_UNTIL, now, nx)
end
function fixed.reset_after(l, s, o, now)
  local ends = 0
  if fixed_count(l, s, o, now) > 0 then ends = pdiff(add(s[o + FIXED_START], l.w), now) end
  return math.max(blocked_for(s[o + FIXED_BLOCKED_UNTIL], now), ends)
end

-- sliding window (SlidingWindowRules) ------------------------------------------------
-- State [start, previous, current, blockedUntil], start aligned to the window.
local function aligned(now, w)
  local q = math.floor(now / w)
  if q * w > now then q = q - 1 elseif (q + 1) * w <= now then q = q + 1 end
  return q * w
end
-- the window rolled to now, into out[p + SLIDING_START .. SLIDING_CURRENT]
local function roll(l, s, o, now, out, p)
  local start = s[o + SLIDING_START]
  local k = aligned(now, l.w)
  local st, prev, curr
  if start == SCRIPT_NONE or k > add(start, l.w) then
    st, prev, curr = k, 0, 0
  elseif k == add(start, l.w) then
    st, prev, curr = k, s[o + SLIDING_CURRENT], 0
  else
    st, prev, curr = start, s[o + SLIDING_PREVIOUS], s[o + SLIDING_CURRENT]
  end
  out[p + SLIDING_START], out[p + SLIDING_PREVIOUS], out[p + SLIDING_CURRENT] = st, prev, curr
end
-- the estimate plus q in exactly core's order of double operations
local function sliding_estimate(l, s, o, now, q)
  local start = s[o + SLIDING_START]
  local k = aligned(now, l.w)
  local prev, curr
  if start == SCRIPT_NONE or k > add(start, l.w) then
    return q
  elseif k == add(start, l.w) then
    prev, curr, start = s[o + SLIDING_CURRENT], 0, k
  else
    prev, curr = s[o + SLIDING_PREVIOUS], s[o + SLIDING_CURRENT]
  end
  local elapsed = math.max(0, math.min(l.w, now - start))
  local weighted = prev * (l.w - elapsed) / l.w
  return weighted + (curr + q)
end

local sliding = {}
function sliding.initialize(l, s, o)
  s[o + SLIDING_START], s[o + SLIDING_PREVIOUS] = SCRIPT_NONE, 0
  s[o + SLIDING_CURRENT], s[o + SLIDING_BLOCKED_UNTIL] = 0, SCRIPT_NONE
end
function sliding.fits(l, s, o, now, q)
  return blocked_for(s[o + SLIDING_BLOCKED_UNTIL], now) == 0
    and sliding_estimate(l, s, o, now, q) <= l.cap
end
function sliding.charge(l, s, o, now, q, nx)
  roll(l, s, o, now, nx, o)
  nx[o + SLIDING_CURRENT] = nx[o + SLIDING_CURRENT] + q
end
function sliding.fill(l, s, o, now, q, nx)
  local est = sliding_estimate(l, s, o, now, q)
  roll(l, s, o, now, nx, o)
  local curr = nx[o + SLIDING_CURRENT]
  nx[o + SLIDING_CURRENT] = math.max(curr, math.min(l.cap, curr + q))
  return (not (est <= l.cap)) or est >= l.cap
end
function sliding.penalize(l, s, o, now, nx)
  block(l, s, o, SLIDING_BLOCKED_UNTIL, now, nx)
end
function sliding.reset_after(l, s, o, now)
  local r = {}
  roll(l, s, o, now, r, 1)
  local stop = now
  if r[1 + SLIDING_CURRENT] > 0 then
    stop = add(r[1 + SLIDING_START], 2 * l.w)
  elseif r[1 + SLIDING_PREVIOUS] > 0 then
    stop = add(r[1 + SLIDING_START], l.w)
  end
  return math.max(blocked_for(s[o + SLIDING_BLOCKED_UNTIL], now), pdiff(stop, now))
end

local RULES = {[BUCKET] = bucket, [FIXED_WINDOW] = fixed, [SLIDING_WINDOW] = sliding}
local SLOTS = {[FIXED_WINDOW] = FIXED_WINDOW_SLOTS, [SLIDING_WINDOW] = SLIDING_WINDOW_SLOTS}

-- the operation across a key's limits (Engine.decide) ---------------------------------
local now = tonumber(ARGV[1 + ARGV_NOW])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local layout = ARGV[1 + ARGV_LAYOUT]
local pad = tonumber(ARGV[1 + ARGV_EXPIRY_PADDING])
local limits = {}
local slots = 0
local a = first   -- the first argument of the limit being read
for i = 1, #layout do
  local l = {kind = tonumber(ARGV[a + ARG_KIND]), cap = tonumber(ARGV[a + ARG_CAPACITY]),
             w = tonumber(ARGV[a + ARG_WINDOW]), pen = tonumber(ARGV[a + ARG_PENALTY]),
             q = tonumber(ARGV[a + ARG_QUANTUM]), sc = tonumber(ARGV[a + ARG_SCALE])}
  l.rules = RULES[l.kind]
  if l.kind == BUCKET then
    l.slots = (l.sc == 1) and BUCKET_SLOTS or SCALED_BUCKET_SLOTS
  else
    l.slots = SLOTS[l.kind]
  end
  l.o = slots + 1
  slots = slots + l.slots
  limits[i] = l
  a = a + ARGS_PER_LIMIT
end
local count = tonumber(ARGV[a + AFTER_LIMITS_COUNT])

-- A state: the slots of limits first..last under one key. One bucket is kept as an integer,
-- which Redis stores integer-encoded: layout 'b', [E], as "E"; layout 'r', [E, R] with R below
-- 1,000, as "-E" followed by R in three digits. Anything else is text: the layout letters, '|',
-- the slots; earlier builds wrote every state so, and those keys are still read.
local function decode(lay, stored, vals)
  local c = string.sub(stored, 1, 1)
  if c >= '0' and c <= '9' then
    if lay == 'b' then vals[1] = tonumber(stored) end
  elseif c == '-' then
    if lay == 'r' and #stored >= 5 then
      vals[1] = tonumber(string.sub(stored, 2, -4))
      vals[2] = tonumber(string.sub(stored, -3))
    end
  else
    local bar = string.find(stored, '|', 1, true)
    if bar and string.sub(stored, 1, bar - 1) == lay then
      for v in string.gmatch(string.sub(stored, bar + 1), '[^,]+') do vals[#vals + 1] = tonumber(v) end
    end
  end
end
local function encode(lay, nx, from, to)
  local e = nx[from + BUCKET_EMPTY_AT]
  if lay == 'b' and e >= 0 then
    return string.format('%.0f', e)
  elseif lay == 'r' and e >= 0 and e < 9e15 and nx[from + BUCKET_REMAINDER] < 1000 then
    return '-' .. string.format('%.0f', e) .. string.format('%03d', nx[from + BUCKET_REMAINDER])
  end
  local parts = {}
  for i = from, to do parts[#parts + 1] = string.format('%.0f', nx[i]) end
  return lay .. '|' .. table.concat(parts, ',')
end
local function load(key, first, last, s)
  local lay = string.sub(layout, first, last)
  local from, to = limits[first].o, limits[last].o + limits[last].slots - 1
  local stored = redis.call('GET', key)
  local vals = {}
  if stored then decode(lay, stored, vals) end
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
    redis.call('SET', key, encode(string.sub(layout, first, last), nx, from, to),
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
  local reserve = tonumber(ARGV[a + AFTER_LIMITS_RESERVE])
  local p = limits[n]
  local ceilings = true
  for i = 2, n - 1 do
    local l = limits[i]
    ceilings = ceilings and bucket.fits(l, s, l.o, now, l.q)
  end
  local assured = bucket.fits(limits[1], s, limits[1].o, now, limits[1].q) and ceilings
    and bucket.fits(p, s, p.o, now, p.q)
  local borrowed = (not assured) and ceilings
    and bucket_admits(backlog(p, s, p.o, now), p.q, p.cap - reserve)
  if op == TRY_ACQUIRE and (assured or borrowed) then
    local first = 1
    if borrowed then first = 2 end
    for i = first, n do
      local l = limits[i]
      bucket.charge(l, s, l.o, now, l.q, nx)
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
  -- reserve (Engine.queues): a limit's queue ahead of the request, in its steps, is the
  -- longest backlog among the limits of its scale, and the others' waits in whole ticks
  local queue = {}
  if op == RESERVE then
    local bk = {}
    for i, l in ipairs(limits) do bk[i] = backlog(l, s, l.o, now) end
    for j, l in ipairs(limits) do
      local most = 0
      for i, m in ipairs(limits) do
        local x = bk[i]
        if m.sc ~= l.sc then x = steps(l, ticks_up(m.sc, bk[i])) end
        if x > most then most = x end
      end
      queue[j] = most
    end
  end
  local ok = {}
  local all = true
  for i, l in ipairs(limits) do
    if op == RESERVE then
      ok[i] = bucket_admits(queue[i], l.q, l.cap)
    else
      ok[i] = l.rules.fits(l, s, l.o, now, l.q)
    end
    all = all and ok[i]
  end
  for i, l in ipairs(limits) do
    if op == FILL_UP then
      if l.rules.fill(l, s, l.o, now, l.q, nx) and l.q <= l.cap and l.pen > 0 then
        l.rules.penalize(l, s, l.o, now, nx)
      end
    elseif op ~= CHECK then
      if all and op == RESERVE then
        hold(l, nx, l.o, now, add(queue[i], l.q))
      elseif all then
        l.rules.charge(l, s, l.o, now, l.q, nx)
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
