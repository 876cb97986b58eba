-- Enter a player in a tournament period, exactly: the seat count and the write in one call.
--
-- KEYS[1]  the period's entrants (a set; the member "" marks it as filled from the database)
-- ARGV[1]  player id   ARGV[2] max entrants (-1: no limit)   ARGV[3] expiry (Unix seconds)
-- Returns  "load" when the set is not filled yet (nothing written: the caller fills it, then
--          calls again), 1 when entered, 0 when already in, -1 when the period is full.

if redis.call('SISMEMBER', KEYS[1], '') == 0 then
  return 'load'
end
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  return 0
end
local limit = tonumber(ARGV[2])
if limit >= 0 and redis.call('SCARD', KEYS[1]) - 1 >= limit then
  return -1
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIREAT', KEYS[1], ARGV[3])
return 1
