-- Fill a period's counted attempts from the ledger, unless another caller has filled them already.
--
-- KEYS[1]  the period's attempts (a hash: player id -> counted results)
-- ARGV[1]  expiry (Unix seconds)   then pairs: player id, counted attempts
-- Returns  1 when it filled the hash, 0 when it was filled already (nothing written). The field
--          "" marks it filled; counting waits for it (enter.lua answers "load" without it).

if redis.call('HEXISTS', KEYS[1], '') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], '', 1)
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIREAT', KEYS[1], ARGV[1])
return 1
