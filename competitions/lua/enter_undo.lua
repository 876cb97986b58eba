-- Give back what enter.lua took for results whose transaction did not commit.
--
-- KEYS[1]  the period's entrants (a set)   KEYS[2] its counted attempts (a hash)
-- ARGV     pairs: player id, 1 when enter.lua also entered the player (else 0)
-- Returns  the number of attempts given back.

local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[2], '') == 1 then
    redis.call('HINCRBY', KEYS[2], ARGV[i], -1)
  end
  if ARGV[i + 1] == '1' then
    redis.call('SREM', KEYS[1], ARGV[i])
  end
  n = n + 1
end
if n > 0 and redis.call('HEXISTS', KEYS[2], '') == 1 then
  redis.call('HINCRBY', KEYS[2], '#v', 1)  -- the attempts' version (competitions/lua/top.lua)
end
return n
