-- Fill a period's entrants from the database, unless another caller has filled them already.
--
-- KEYS[1]  the period's entrants (a set)
-- ARGV[1]  expiry (Unix seconds)   ARGV[2 ..] the entrants' ids
-- Returns  1 when it filled the set, 0 when it was filled already (nothing written). The member
--          "" marks it filled; joins wait for it (join.lua answers "load" without it).

if redis.call('SISMEMBER', KEYS[1], '') == 1 then
  return 0
end
redis.call('SADD', KEYS[1], '')
for i = 2, #ARGV do
  redis.call('SADD', KEYS[1], ARGV[i])
end
redis.call('EXPIREAT', KEYS[1], ARGV[1])
return 1
