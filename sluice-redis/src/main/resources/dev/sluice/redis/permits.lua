-- Sluice's permits in flight (a ConcurrencyLimiter on Redis): one call per acquire, renew and
-- release, each one atomic step on Redis TIME in milliseconds.
--
-- A key's permits are one sorted set: a permit of weight w is w members (its id, then id#2 to
-- id#w), all scored by the instant its lease ends. An acquire, renew or count first drops the
-- members whose lease has ended (score <= now), so the set's cardinality is the weight in flight;
-- a release removes its permit only if its lease has not ended. The set expires when its last
-- lease ends (its expiry only moves later), and Redis deletes it when it empties.
--
-- A cancel gives back the permit of an acquire whose caller did not get the answer (a timeout):
-- it removes the permit if held, and in any case puts the id in the key's cancelled set
-- (KEYS[2]), scored by now plus the lease; an acquire of an id found there, unexpired, takes
-- nothing, so an acquire that reaches Redis after its cancel holds nothing. That set expires with
-- its last entry as the permits' set does.
--
-- A key of a group (a ConcurrencyGroup) has its sorted set under the group's hash tag, and every
-- permit of the group is also in the group's sorted set (KEYS[2]) as the key, U+0000, the
-- member: both are pruned and changed in the same call, so the group's cardinality is the
-- group's weight in flight. A grouped acquire adds the permit when it fits the ceiling, the
-- group's limit, and either the key's assured share or the group's borrowing ceiling.
--
-- KEYS[1]  the key's sorted set       KEYS[2]  the key's cancelled ids (acquire and cancel)
-- KEYS[3]  the group's sorted set (grouped calls only)
-- ARGV: the PERMIT_ARGV_ offsets below (StoreProtocol's; RedisProtocolTest compares them).
-- Returns {done (1 or 0), weight in flight after the call, now in ms}.

-- the operations
local PERMIT_ACQUIRE, PERMIT_RENEW, PERMIT_RELEASE, PERMIT_COUNT, PERMIT_CANCEL = 0, 1, 2, 3, 4
-- ARGV, from 0: the operation, now in ms (-1: Redis TIME; tests pass their clock), the permit
-- id, its weight, the ceiling (acquire: the most weight in flight after it), the lease in ms,
-- the expiry padding in ms (with a test clock)
local PERMIT_ARGV_OP = 0
local PERMIT_ARGV_NOW = 1
local PERMIT_ARGV_ID = 2
local PERMIT_ARGV_WEIGHT = 3
local PERMIT_ARGV_CEILING = 4
local PERMIT_ARGV_LEASE = 5
local PERMIT_ARGV_EXPIRY_PADDING = 6
local PERMIT_ARGV_PLAIN = 7
-- then a group's calls only: the group's limit, its borrowing ceiling, the key's assured share
-- (those three in an acquire) and the prefix of the key's members in the group's set
local PERMIT_ARGV_GROUP_LIMIT = 7
local PERMIT_ARGV_GROUP_CEILING = 8
local PERMIT_ARGV_ASSURED = 9
local PERMIT_ARGV_MEMBERS = 10
local PERMIT_ARGV_GROUPED = 11

local CHUNK = 1000

if #ARGV ~= PERMIT_ARGV_PLAIN and #ARGV ~= PERMIT_ARGV_GROUPED then
  return redis.error_reply('sluice permits: ' .. #ARGV .. ' arguments, expected '
      .. PERMIT_ARGV_PLAIN .. ' or ' .. PERMIT_ARGV_GROUPED)
end
local key = KEYS[1]
local cancelled = KEYS[2]
local group = KEYS[3]
local in_group = ARGV[1 + PERMIT_ARGV_MEMBERS]
local op = tonumber(ARGV[1 + PERMIT_ARGV_OP])
local now = tonumber(ARGV[1 + PERMIT_ARGV_NOW])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local id = ARGV[1 + PERMIT_ARGV_ID]
local weight = tonumber(ARGV[1 + PERMIT_ARGV_WEIGHT])

-- the usual call first, before anything else is defined: a permit of weight 1 outside a group
if weight == 1 and not group then
  if op == PERMIT_RELEASE then
    local score = redis.call('ZSCORE', key, id)
    local removed = 0
    if score and tonumber(score) > now then
      removed = redis.call('ZREM', key, id)
    end
    return {removed, redis.call('ZCARD', key), now}
  end
  if op == PERMIT_ACQUIRE then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    local n = redis.call('ZCARD', key)
    local c = redis.call('ZSCORE', cancelled, id)
    if c and tonumber(c) > now then
      return {0, n, now}   -- its cancel came first: it takes nothing
    end
    if n + 1 > tonumber(ARGV[1 + PERMIT_ARGV_CEILING]) then
      -- full: a resent call whose permit is held is still answered as acquired
      return {redis.call('ZSCORE', key, id) and 1 or 0, n, now}
    end
    local expires = now + tonumber(ARGV[1 + PERMIT_ARGV_LEASE])
    if redis.call('ZADD', key, 'NX', expires, id) == 0 then
      return {1, n, now}   -- a resent call: its permit is held, nothing is taken twice
    end
    local ttl = expires - now + tonumber(ARGV[1 + PERMIT_ARGV_EXPIRY_PADDING])
    if redis.call('PTTL', key) < ttl then
      redis.call('PEXPIRE', key, ttl)
    end
    return {1, n + 1, now}
  end
end

-- calls command on set for the permit's members, each named base then #2 to #w (with score
-- before each when given), in chunks; a permit of weight 1, the usual one, is one call without
-- building a list; returns the sum of the replies
local function on_set(set, base, command, flag, score)
  if weight == 1 then
    if score then
      return flag and redis.call(command, set, flag, score, base)
          or redis.call(command, set, score, base)
    end
    return redis.call(command, set, base)
  end
  local total = 0
  local list = {}
  for i = 1, weight do
    if score then
      list[#list + 1] = score
    end
    list[#list + 1] = i == 1 and base or (base .. '#' .. i)
    if i % CHUNK == 0 or i == weight then
      if flag then
        total = total + redis.call(command, set, flag, unpack(list))
      else
        total = total + redis.call(command, set, unpack(list))
      end
      list = {}
    end
  end
  return total
end

-- the permit's members in the key's set, and in the group's for a grouped call
local function on_members(command, flag, score)
  local n = on_set(key, id, command, flag, score)
  if group then
    on_set(group, in_group .. id, command, flag, score)
  end
  return n
end

-- a set lives until its last lease ends: its expiry only ever moves later
local function expire_set(set, expires)
  local ttl = expires - now + tonumber(ARGV[1 + PERMIT_ARGV_EXPIRY_PADDING])
  if redis.call('PTTL', set) < ttl then
    redis.call('PEXPIRE', set, ttl)
  end
end

local function expire_with(expires)
  expire_set(key, expires)
  if group then
    expire_set(group, expires)
  end
end

if op == PERMIT_RELEASE then
  -- a release needs no count: it removes the permit's members, unless its lease has ended (then
  -- it changes nothing: the next call drops them), and answers with what the set holds
  local score = redis.call('ZSCORE', key, id)
  local removed = 0
  if score and tonumber(score) > now then
    removed = on_members('ZREM')
  end
  return {removed > 0 and 1 or 0, redis.call('ZCARD', key), now}
end

if op == PERMIT_CANCEL then
  -- the permit goes if held; the id is remembered as cancelled until now plus the lease
  local score = redis.call('ZSCORE', key, id)
  local removed = 0
  if score and tonumber(score) > now then
    removed = on_members('ZREM')
  end
  local ends = now + tonumber(ARGV[1 + PERMIT_ARGV_LEASE])
  redis.call('ZREMRANGEBYSCORE', cancelled, '-inf', now)
  local c = redis.call('ZSCORE', cancelled, id)
  if not c or tonumber(c) < ends then
    redis.call('ZADD', cancelled, ends, id)
  end
  expire_set(cancelled, ends)
  return {removed > 0 and 1 or 0, redis.call('ZCARD', key), now}
end

redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local n = redis.call('ZCARD', key)
local g = 0
if group then
  redis.call('ZREMRANGEBYSCORE', group, '-inf', now)
  g = redis.call('ZCARD', group)
end
if op == PERMIT_COUNT then
  return {0, n, now}
end
if op ~= PERMIT_ACQUIRE and op ~= PERMIT_RENEW then
  return redis.error_reply('sluice permits: no operation has code ' .. tostring(op))
end

local held = redis.call('ZSCORE', key, id)
local expires = now + tonumber(ARGV[1 + PERMIT_ARGV_LEASE])
if op == PERMIT_RENEW then
  if not held then
    return {0, n, now}
  end
  on_members('ZADD', 'XX', expires)
  expire_with(expires)
  return {1, n, now}
end

-- acquire: a resent call finds its permit held and takes nothing twice; one that comes after
-- its cancel takes nothing
if held then
  return {1, n, now}
end
local c = redis.call('ZSCORE', cancelled, id)
if c and tonumber(c) > now then
  return {0, n, now}
end
if n + weight > tonumber(ARGV[1 + PERMIT_ARGV_CEILING]) then
  return {0, n, now}
end
if group and (g + weight > tonumber(ARGV[1 + PERMIT_ARGV_GROUP_LIMIT])
    or (n + weight > tonumber(ARGV[1 + PERMIT_ARGV_ASSURED])
      and g + weight > tonumber(ARGV[1 + PERMIT_ARGV_GROUP_CEILING]))) then
  return {0, n, now}
end
on_members('ZADD', nil, expires)
expire_with(expires)
return {1, n + weight, now}
