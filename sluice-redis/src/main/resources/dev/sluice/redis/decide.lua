-- Sluice: one decision, atomically, on Redis time. A port of core's Engine (docs/semantics.md):
-- it must compute the same next state; the figures are rebuilt in Java from what it returns.
--
-- KEYS[1]  the key's state: "<layout>|slot,slot,..."; absent means the initial state
-- ARGV     op (0 tryAcquire, 1 check, 2 fillUp, 3 reserve), now (microseconds, or -1: TIME),
--          layout, expiry padding (ms; 0 unless time is passed in), then per limit: kind,
--          capacity, window, penalty, quantum
-- returns  { now, slot, slot, ... }   the clock reading and the state before the operation
--
-- Numbers are doubles: every value stays below 2^53 (times in microseconds, capacities and
-- penalties at most 2^51). "None" is -2^53.
local NONE = -9007199254740992
local MAXT = 9007199254740991
local TRY, CHECK, FILL, RESERVE = 0, 1, 2, 3

local function add(a, b)
  local r = a + b
  if r > MAXT then return MAXT end
  return r
end
local function pdiff(a, b)
  if a <= b then return 0 end
  return a - b
end
local function backlog(e, now)
  if e == NONE then return 0 end
  return pdiff(e, now)
end
local function blocked_for(b, now)
  if b == NONE then return 0 end
  return pdiff(b, now)
end
local function aligned(now, w)
  local q = math.floor(now / w)
  if q * w > now then q = q - 1 elseif (q + 1) * w <= now then q = q + 1 end
  return q * w
end

-- fixed window ------------------------------------------------------------------
local function fixed_expired(l, start, now)
  return start == NONE or now >= add(start, l.w)
end
local function fixed_count(l, s, o, now)
  if fixed_expired(l, s[o], now) then return 0 end
  return s[o + 1]
end

-- sliding window ----------------------------------------------------------------
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

-- operations --------------------------------------------------------------------
local function fits(l, s, o, now, q)
  if l.kind == 0 then
    return add(backlog(s[o], now), q) <= l.cap
  elseif l.kind == 1 then
    return blocked_for(s[o + 2], now) == 0 and fixed_count(l, s, o, now) + q <= l.cap
  else
    return blocked_for(s[o + 3], now) == 0 and sliding_estimate(l, s, o, now, q) <= l.cap
  end
end

local function charge(l, s, o, now, q, departure, nx)
  if l.kind == 0 then
    nx[o] = add(math.max(departure, add(now, backlog(s[o], now))), q)
  elseif l.kind == 1 then
    if fixed_expired(l, s[o], now) then
      nx[o], nx[o + 1] = now, q
    else
      nx[o + 1] = s[o + 1] + q
    end
  else
    roll(l, s, o, now, nx, o)
    nx[o + 2] = nx[o + 2] + q
  end
end

local function penalize(l, s, o, now, nx)
  if l.pen <= 0 then return end
  if l.kind == 0 then
    if backlog(s[o], now) <= l.cap then nx[o] = add(now, add(l.cap, l.pen)) end
  else
    local b = o + l.slots - 1
    if blocked_for(s[b], now) == 0 then nx[b] = add(now, l.pen) end
  end
end

local function fill(l, s, o, now, q, nx)
  local reached
  if l.kind == 0 then
    local b = backlog(s[o], now)
    local filled = add(b, q)
    reached = filled >= l.cap
    nx[o] = add(now, math.max(b, math.min(l.cap, filled)))
  elseif l.kind == 1 then
    local count = fixed_count(l, s, o, now)
    reached = count + q >= l.cap
    if fixed_expired(l, s[o], now) then nx[o] = now end
    nx[o + 1] = math.max(count, math.min(l.cap, count + q))
  else
    local est = sliding_estimate(l, s, o, now, q)
    reached = (not (est <= l.cap)) or est >= l.cap
    roll(l, s, o, now, nx, o)
    nx[o + 2] = math.max(nx[o + 2], math.min(l.cap, nx[o + 2] + q))
  end
  if reached and q <= l.cap then penalize(l, s, o, now, nx) end
end

local function reset_after(l, s, o, now)
  if l.kind == 0 then
    return backlog(s[o], now)
  elseif l.kind == 1 then
    local ends = 0
    if fixed_count(l, s, o, now) > 0 then ends = pdiff(add(s[o], l.w), now) end
    return math.max(blocked_for(s[o + 2], now), ends)
  else
    local r = {}
    roll(l, s, o, now, r, 1)
    local stop = now
    if r[3] > 0 then stop = add(r[1], 2 * l.w) elseif r[2] > 0 then stop = add(r[1], l.w) end
    return math.max(blocked_for(s[o + 3], now), pdiff(stop, now))
  end
end

-- main --------------------------------------------------------------------------
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
             pen = tonumber(ARGV[a + 3]), q = tonumber(ARGV[a + 4])}
  l.slots = (l.kind == 0) and 1 or ((l.kind == 1) and 3 or 4)
  l.o = slots + 1
  slots = slots + l.slots
  limits[i] = l
  a = a + 5
end

local s = {}
local stored = redis.call('GET', KEYS[1])
local bar = stored and string.find(stored, '|', 1, true)
if bar and string.sub(stored, 1, bar - 1) == layout then
  local i = 1
  for v in string.gmatch(string.sub(stored, bar + 1), '[^,]+') do
    s[i] = tonumber(v)
    i = i + 1
  end
end
if #s ~= slots then
  s = {}
  for _, l in ipairs(limits) do
    s[l.o] = NONE
    if l.kind ~= 0 then
      for j = 1, l.slots - 2 do s[l.o + j] = 0 end
      s[l.o + l.slots - 1] = NONE
    end
  end
end

local nx = {}
for i = 1, slots do nx[i] = s[i] end
local departure = now
if op == RESERVE then
  for _, l in ipairs(limits) do departure = math.max(departure, add(now, backlog(s[l.o], now))) end
end
local ok = {}
local all = true
for i, l in ipairs(limits) do
  if op == RESERVE then
    ok[i] = add(departure - now, l.q) <= l.cap
  else
    ok[i] = fits(l, s, l.o, now, l.q)
  end
  all = all and ok[i]
end
for i, l in ipairs(limits) do
  if op == FILL then
    fill(l, s, l.o, now, l.q, nx)
  elseif op ~= CHECK then
    if all then
      charge(l, s, l.o, now, l.q, (op == RESERVE) and departure or now, nx)
    elseif (not ok[i]) and l.q <= l.cap then
      penalize(l, s, l.o, now, nx)
    end
  end
end

local changed = false
for i = 1, slots do
  if nx[i] ~= s[i] then changed = true end
end
if changed then
  local idle = 0
  for _, l in ipairs(limits) do idle = math.max(idle, reset_after(l, nx, l.o, now)) end
  if idle <= 0 then
    redis.call('DEL', KEYS[1])
  else
    local parts = {}
    for i = 1, slots do parts[i] = string.format('%.0f', nx[i]) end
    redis.call('SET', KEYS[1], layout .. '|' .. table.concat(parts, ','),
               'PX', math.ceil(idle / 1000) + pad)
  end
end

local out = {now}
for i = 1, slots do out[i + 1] = s[i] end
return out
