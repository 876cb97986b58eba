-- Fill a league period's assignment state from the database (its LeagueMember rows), unless
-- another caller has filled it already. The player map was written beforehand in chunks into a
-- staging key (KEYS[4]); this call puts it in place with the counters, atomically.
--
-- KEYS[1]  the player map   KEYS[2] the counters   KEYS[3] the cohorts with a free seat
-- KEYS[4]  the staging copy of the player map (may be absent: no members)
-- ARGV[1]  expiry (Unix seconds)   ARGV[2] cohort_size
-- ARGV[3 ..] triples: division, cohort number, its size (every cohort of the period)
-- Returns  1 when it filled the state, 0 when it was filled already (the staging copy dropped).

if redis.call('HEXISTS', KEYS[2], '') == 1 then
  redis.call('DEL', KEYS[4])
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('RENAME', KEYS[4], KEYS[1])
end
local size = tonumber(ARGV[2])
local open = {}
for i = 3, #ARGV, 3 do
  local division, number, taken = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  redis.call('HSET', KEYS[2], 'c:' .. division .. ':' .. number, taken)
  redis.call('HINCRBY', KEYS[2], 'p:' .. division, taken)
  if not open[division] or number > open[division] then
    open[division] = number
  end
end
for i = 3, #ARGV, 3 do
  local division, number, taken = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if number < open[division] and taken < size then
    redis.call('ZADD', KEYS[3], tonumber(division) * 4294967296 + number, division .. ':' .. number)
  end
end
for division, number in pairs(open) do
  redis.call('HSET', KEYS[2], 'o:' .. division, number)
end
redis.call('HSET', KEYS[2], '', 1)
for k = 1, 3 do
  redis.call('EXPIREAT', KEYS[k], ARGV[1])
end
return 1
