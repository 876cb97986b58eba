-- Token buckets, one per key, spent atomically (the caller passes the server's clock).
-- Needs bucket_lib.lua joined in front.
--
-- KEYS[i]   a bucket
-- ARGV[1]   now, in milliseconds
-- ARGV[2]   capacity (tokens when full)
-- ARGV[3]   milliseconds per token (refill rate)
-- ARGV[4]   bucket TTL in seconds
-- ARGV[4+i] tokens wanted from KEYS[i]
-- Returns, per key, two integers: the tokens granted, and when short, the milliseconds until the
-- next token (0 when everything wanted was granted).

local now = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local per_token = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local reply = {}
for i, key in ipairs(KEYS) do
  local granted, wait = bucket_take(key, tonumber(ARGV[4 + i]), now, capacity, per_token, ttl)
  reply[#reply + 1] = granted
  reply[#reply + 1] = wait
end
return reply
