-- Enter results in one tournament period, exactly: each result's verdict decided and its counters
-- written in one call, in the order of ARGV (docs/api.md, "Counting").
--
-- KEYS[1]  the period's entrants (a set; member "" = filled)
-- KEYS[2]  the period's counted attempts (a hash player -> count; field "" = filled)
-- ARGV[1]  max entrants (-1: none)   ARGV[2] max attempts (-1: none)   ARGV[3] join required (0/1)
-- ARGV[4]  expiry of both keys (Unix seconds)   ARGV[5 ..] the results' player ids, in order
-- Returns  "load" when either counter is not filled (nothing written: the caller fills them from
--          the database, then calls again); else one code per result:
--          1 counted, 2 counted and entered by it (a first result without join_required),
--          3 not_entered, 4 full, 5 no_attempts_left.
-- Every check comes before the writes of the same result; a result's writes are two commands. A
-- call that counted anything bumps the hash's field '#v' (its version: top.lua reads it).

if redis.call('SISMEMBER', KEYS[1], '') == 0 or redis.call('HEXISTS', KEYS[2], '') == 0 then
  return 'load'
end
local max_entrants = tonumber(ARGV[1])
local max_attempts = tonumber(ARGV[2])
local join_required = ARGV[3] == '1'
local entrants = redis.call('SCARD', KEYS[1]) - 1
local codes = {}
local changed = false
for i = 5, #ARGV do
  local player = ARGV[i]
  local code
  local entered = redis.call('SISMEMBER', KEYS[1], player) == 1
  if not entered and join_required then
    code = 3
  elseif not entered and max_entrants >= 0 and entrants >= max_entrants then
    code = 4
  else
    local used = tonumber(redis.call('HGET', KEYS[2], player) or '0')
    if max_attempts >= 0 and used >= max_attempts then
      code = 5
    else
      redis.call('HINCRBY', KEYS[2], player, 1)
      code = 1
      if not entered then
        redis.call('SADD', KEYS[1], player)
        entrants = entrants + 1
        code = 2
      end
    end
  end
  codes[#codes + 1] = code
  if code <= 2 then changed = true end
end
if changed then
  redis.call('HINCRBY', KEYS[2], '#v', 1)  -- the attempts' version (competitions/lua/top.lua)
end
redis.call('EXPIREAT', KEYS[1], ARGV[4])
redis.call('EXPIREAT', KEYS[2], ARGV[4])
return codes
