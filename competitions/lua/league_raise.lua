-- Raise a league period's assignment state to the seats stored in the database (the
-- reconciliation's repair, scoring/reconcile_leagues.py): only what is missing or lower is
-- written, so a seat a submission in flight took (ahead of the database) is never taken away.
--
-- KEYS[1]  the period's player map   KEYS[2] its counters
-- ARGV[1]  expiry of the keys (Unix seconds)   ARGV[2] n, the number of seats that follow
-- ARGV[3 .. 2 + 2n]  pairs: player id, the stored seat "D:N" (written where the map has none)
-- then     pairs: a counter field ("c:D:N", "o:D", "p:D"), the stored value (written if higher)
-- Returns  the number of fields written. A state not filled is left alone (its fill reads the rows).

if redis.call('HEXISTS', KEYS[2], '') == 0 then
  return 0
end
local n = tonumber(ARGV[2])
local written = 0
for i = 3, 2 + 2 * n, 2 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    written = written + 1
  end
end
for i = 3 + 2 * n, #ARGV, 2 do
  if tonumber(redis.call('HGET', KEYS[2], ARGV[i]) or '0') < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
    written = written + 1
  end
end
redis.call('EXPIREAT', KEYS[1], ARGV[1])
redis.call('EXPIREAT', KEYS[2], ARGV[1])
return written
