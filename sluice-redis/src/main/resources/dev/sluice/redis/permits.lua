-- Sluice's permits in flight (a ConcurrencyLimiter on Redis): one call per acquire, renew and
-- release, each one atomic step on Redis TIME in milliseconds.
--
-- A key's permits are one sorted set: a permit of weight w is w members (its id, then id#2 to
-- id#w), all scored by the instant its lease ends. Every call first drops the members whose lease
-- has ended (score <= now), so the set's cardinality is the weight in flight; the set expires
-- when its last lease ends, and Redis deletes it when it empties.
--
-- KEYS[1]  the key's sorted set
-- ARGV[1]  operation: 0 acquire, 1 renew, 2 release, 3 count
-- ARGV[2]  now in ms, or -1 for Redis TIME (tests pass their clock)
-- ARGV[3]  permit id        ARGV[4]  weight
-- ARGV[5]  ceiling (acquire: the most weight in flight after it)
-- ARGV[6]  lease in ms      ARGV[7]  expiry padding in ms (with a test clock)
-- Returns {done (1 or 0), weight in flight after the call, now in ms}.

local OP_ACQUIRE, OP_RENEW, OP_RELEASE = 0, 1, 2
local CHUNK = 1000

local key = KEYS[1]
local op = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local n = redis.call('ZCARD', key)
if op ~= OP_ACQUIRE and op ~= OP_RENEW and op ~= OP_RELEASE then
  return {0, n, now}
end
local id = ARGV[3]
local weight = tonumber(ARGV[4])

-- the permit's members, in chunks; each chunk is passed to f(list)
local function each_chunk(with_score, score, f)
  local list = {}
  for i = 1, weight do
    if with_score then
      list[#list + 1] = score
    end
    list[#list + 1] = i == 1 and id or (id .. '#' .. i)
    if i % CHUNK == 0 or i == weight then
      f(list)
      list = {}
    end
  end
end

-- the set lives until its last lease ends
local function expire_with_last_lease()
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIRE', key, tonumber(last[2]) - now + tonumber(ARGV[7]))
  end
end

if op == OP_RELEASE then
  local removed = 0
  each_chunk(false, 0, function(list)
    removed = removed + redis.call('ZREM', key, unpack(list))
  end)
  return {removed > 0 and 1 or 0, n - removed, now}
end

local held = redis.call('ZSCORE', key, id)
local expires = now + tonumber(ARGV[6])
if op == OP_RENEW then
  if not held then
    return {0, n, now}
  end
  each_chunk(true, expires, function(list)
    redis.call('ZADD', key, 'XX', unpack(list))
  end)
  expire_with_last_lease()
  return {1, n, now}
end

-- acquire: a resent call finds its permit held and takes nothing twice
if held then
  return {1, n, now}
end
if n + weight > tonumber(ARGV[5]) then
  return {0, n, now}
end
each_chunk(true, expires, function(list)
  redis.call('ZADD', key, unpack(list))
end)
expire_with_last_lease()
return {1, n + weight, now}
