-- Token bucket arithmetic, shared by token_bucket.lua and anticheat/lua/judge.lua (joined in
-- front of them by common.redis.lua_path).
--
-- A bucket is a hash: t = tokens (fractional), ts = last refill in ms. It refills at one token per
-- `per_token` ms up to `capacity`; a missing bucket is full. Every take rewrites it with a TTL of
-- `ttl` seconds (a full refill and then some), so idle buckets disappear.
-- Returns the tokens granted (at most `want`) and, when short, the ms until the next token.

local function bucket_take(key, want, now, capacity, per_token, ttl)
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
  return granted, wait
end
