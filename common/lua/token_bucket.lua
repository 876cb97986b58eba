-- Token buckets, one per key, spent atomically (the caller passes the server's clock).
--
-- KEYS[i]   a bucket (hash: t = tokens, ts = last refill in ms)
-- ARGV[1]   now, in milliseconds
-- ARGV[2]   capacity (tokens when full)
-- ARGV[3]   milliseconds per token (refill rate)
-- ARGV[4]   bucket TTL in seconds (a full refill and then some: idle buckets disappear)
-- ARGV[4+i] tokens wanted from KEYS[i]
-- Returns, per key, two integers: the tokens granted, and when short, the milliseconds until the
-- next token (0 when everything wanted was granted).

local now = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local per_token = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local reply = {}
for i, key in ipairs(KEYS) do
  local want = tonumber(ARGV[4 + i])
  local state = redis.call('HMGET', key, 't', 'ts')
  local tokens = tonumber(state[1]) or capacity
  local last = tonumber(state[2]) or now
  if now > last then
    tokens = math.min(capacity, tokens + (now - last) / per_token)
  end
  local granted = math.min(want, math.floor(tokens))
  tokens = tokens - granted
  redis.call('HSET', key, 't', string.format('%.6f', tokens), 'ts', string.format('%d', math.max(now, last)))
  redis.call('EXPIRE', key, ttl)
  local wait = 0
  if granted < want then
    wait = math.ceil((1 - tokens) * per_token)
    if wait < 1 then wait = 1 end
  end
  reply[#reply + 1] = granted
  reply[#reply + 1] = wait
end
return reply
