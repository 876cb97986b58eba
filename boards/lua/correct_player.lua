-- Write one player's re-derived scores as absolute values (a correction), atomically with the
-- dedup markers of the events the values already include.
-- Needs ranking_lib.lua joined in front (the dense rule's companion: companion_add, _drop).
--
-- KEYS[1]                    pause flag of the game
-- KEYS[2 .. 1+N]             the affected boards
-- KEYS[2+N .. 1+2N]          their distinct-points companions (used only when dense = 1)
-- KEYS[2+2N .. 1+3N]         their versions (bumped for every board changed)
-- KEYS[rest]                 dedup hashes, referenced by index
-- ARGV[1] player   ARGV[2] N   ARGV[3] span = 2^time_bits   ARGV[4] dense (0/1)
-- ARGV[5 .. 4+N]             the new score on each board, or "" to remove the player from it
-- ARGV[5+N .. 4+2N]          TTL in seconds for a board this creates (0: none)
-- then triplets: dedup key index, dedup field, dedup tag (events whose points the new scores include)
-- Returns {"paused"} or {"ok", boards changed}.
-- A later apply of an included event finds its marker and is skipped: never counted twice.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'paused'}
end
local player = ARGV[1]
local n = tonumber(ARGV[2])
local span = tonumber(ARGV[3])
local dense = ARGV[4] == '1'
local changed = 0

local now = redis.call('TIME')

-- As in apply_events.lua: a new version key starts at the server's clock in microseconds.
local function bump_version(key, ttl)
  if redis.call('EXISTS', key) == 0 then
    redis.call('SET', key, fmt(tonumber(now[1]) * 1000000 + tonumber(now[2])))
  end
  redis.call('INCR', key)
  if ttl > 0 then redis.call('EXPIRE', key, ttl) end
end

for i = 1, n do
  local board = KEYS[1 + i]
  local companion = KEYS[1 + n + i]
  local new = ARGV[4 + i]
  local old = redis.call('ZSCORE', board, player)
  local old_points = old and math.floor(tonumber(old) / span) or nil
  local version = KEYS[1 + 2 * n + i]
  local ttl = tonumber(ARGV[4 + n + i])
  if new == '' then
    if old then
      redis.call('ZREM', board, player)
      if dense then companion_drop(board, companion, span, old_points) end
      bump_version(version, ttl)
      changed = changed + 1
    end
  elseif new ~= old then
    redis.call('ZADD', board, new, player)
    if ttl > 0 and redis.call('TTL', board) == -1 then redis.call('EXPIRE', board, ttl) end
    if dense then
      local new_points = math.floor(tonumber(new) / span)
      companion_add(companion, new_points)
      if old_points and old_points ~= new_points then companion_drop(board, companion, span, old_points) end
    end
    bump_version(version, ttl)
    changed = changed + 1
  end
end

for i = 5 + 2 * n, #ARGV, 3 do
  redis.call('HSET', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
end
return {'ok', changed}
