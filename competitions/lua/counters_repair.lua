-- Repair a period's counters where the reconciliation found them apart from the database: each
-- player's value is written only if the counter still holds what the reconciliation saw (a change
-- since then is left for its next run), and only while both counters are filled.
--
-- KEYS[1]  the period's entrants (a set; member "" = filled)
-- KEYS[2]  the period's counted attempts (a hash; field "" = filled)
-- ARGV     quadruples: kind ("a" attempts, "e" entrant), player id, seen, wanted; for "a" counts
--          (0: no field), for "e" 1 (a member) or 0
-- Returns  the number of values written; -1 when a counter is not filled (nothing written: the
--          next use fills it from the database).

if redis.call('SISMEMBER', KEYS[1], '') == 0 or redis.call('HEXISTS', KEYS[2], '') == 0 then
  return -1
end
local written = 0
for i = 1, #ARGV, 4 do
  local kind, player, seen, wanted = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  if kind == 'a' then
    if tonumber(redis.call('HGET', KEYS[2], player) or '0') == seen then
      if wanted > 0 then redis.call('HSET', KEYS[2], player, wanted) else redis.call('HDEL', KEYS[2], player) end
      written = written + 1
    end
  elseif redis.call('SISMEMBER', KEYS[1], player) == seen then
    if wanted == 1 then redis.call('SADD', KEYS[1], player) else redis.call('SREM', KEYS[1], player) end
    written = written + 1
  end
end
return written
