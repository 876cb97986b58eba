-- Seat players in cohorts of one league period, exactly: each player's cohort looked up, or for a
-- player without one decided and written in the same call (docs/api.md, "Leagues", cohorts).
--
-- KEYS[1]  the period's player map (a hash: player -> "division:number")
-- KEYS[2]  the period's counters (a hash: "o:D" open cohort number of division D, "c:D:N" size of
--          cohort N of D, "p:D" players of D; field "" = filled from the database)
-- KEYS[3]  cohorts with a free seat below their division's open one (a sorted set of "D:N",
--          scored D * 2^32 + N): left by seats given back; filled first, lowest number first
-- ARGV[1]  cohort_size   ARGV[2] expiry of the three keys (Unix seconds)
-- ARGV[3 ..] pairs: player id, division index (the division a new seat goes in)
-- Returns  "load" when the counters are not filled (nothing written: the caller fills them from
--          the database, then calls again); else one "D:N:F" per pair, in order: the player's
--          cohort, F 1 when this call seated them (2: as the cohort's first member), 0 when they
--          had a seat (in whatever division).
-- Nothing is checked after a write: a seat is one HINCRBY of its cohort's counter and one HSET
-- (each division's open cohort read once a call, its players counted once at the end).

if redis.call('HEXISTS', KEYS[2], '') == 0 then
  return 'load'
end
local size = tonumber(ARGV[1])
-- What this call learnt of each division (nothing else writes while it runs): its open cohort and
-- that cohort's size, that it has no free seat below (no call here adds one), the players it seated.
local open_of, size_of, no_hole, seated = {}, {}, {}, {}
local out = {}
for i = 3, #ARGV, 2 do
  local player, division = ARGV[i], ARGV[i + 1]
  local seat = redis.call('HGET', KEYS[1], player)
  if seat then
    out[#out + 1] = seat .. ':0'
  else
    local hole = nil
    if not no_hole[division] then
      local low = tonumber(division) * 4294967296
      hole = redis.call('ZRANGEBYSCORE', KEYS[3], low, low + 4294967295, 'LIMIT', 0, 1)[1]
      if not hole then no_hole[division] = true end
    end
    if hole then
      seat = hole
    else
      local open = open_of[division]
      if open == nil then
        open = redis.call('HGET', KEYS[2], 'o:' .. division)
        if open then
          size_of[division] = tonumber(redis.call('HGET', KEYS[2], 'c:' .. division .. ':' .. open) or '0')
        end
      end
      if not open or size_of[division] >= size then
        open = redis.call('HINCRBY', KEYS[2], 'o:' .. division, 1)
      end
      open_of[division] = tostring(open)
      seat = division .. ':' .. open
    end
    local taken = redis.call('HINCRBY', KEYS[2], 'c:' .. seat, 1)
    if open_of[division] and seat == division .. ':' .. open_of[division] then
      size_of[division] = taken
    end
    if hole and taken >= size then
      redis.call('ZREM', KEYS[3], hole)
    end
    seated[division] = (seated[division] or 0) + 1
    redis.call('HSET', KEYS[1], player, seat)
    out[#out + 1] = seat .. (taken == 1 and ':2' or ':1')
  end
end
for division, n in pairs(seated) do
  redis.call('HINCRBY', KEYS[2], 'p:' .. division, n)
end
for k = 1, 3 do
  redis.call('EXPIREAT', KEYS[k], ARGV[2])
end
return out
