-- Give back seats that league_assign.lua gave to players whose transaction did not commit.
--
-- KEYS[1]  the period's player map   KEYS[2] its counters   KEYS[3] its cohorts with a free seat
-- ARGV     pairs: player id, the seat "D:N" it was given
-- Returns  the number of seats given back. A seat below its division's open cohort becomes a
--          free seat (KEYS[3]) that the next player of that division takes: cohorts stay full.
--          Counters not filled (Redis lost them): nothing to give back (a fill reads the
--          committed rows).

if redis.call('HEXISTS', KEYS[2], '') == 0 then
  return 0
end
local n = 0
for i = 1, #ARGV, 2 do
  local player, seat = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[1], player) == seat then
    local division, number = string.match(seat, '^(%d+):(%d+)$')
    redis.call('HDEL', KEYS[1], player)
    redis.call('HINCRBY', KEYS[2], 'c:' .. seat, -1)
    redis.call('HINCRBY', KEYS[2], 'p:' .. division, -1)
    if tonumber(number) < tonumber(redis.call('HGET', KEYS[2], 'o:' .. division) or '0') then
      redis.call('ZADD', KEYS[3], tonumber(division) * 4294967296 + tonumber(number), seat)
    end
    n = n + 1
  end
end
return n
