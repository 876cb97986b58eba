-- Apply a batch of accepted score events to one group of boards, at most once per event.
-- Needs ranking_lib.lua joined in front (the score rules; the dense rule's companion_add, _drop).
--
-- KEYS[1]                      pause flag of the game (set while rebuild_boards swaps keys in)
-- KEYS[2]                      the game's hidden players (a set): their events touch no board
-- KEYS[3 .. 2+S]               points boards (season, day, week, month; global and region): sums
-- KEYS[3+S .. 2+S+B]           best boards: best single-match points, only ever raised
-- KEYS[3+S+B .. 2+2(S+B)]      distinct-points companions of those boards (only when dense = 1)
-- next S+B keys                the boards' versions (bumped with every change, read by cached reads)
-- KEYS[rest]                   dedup hashes, referenced by index from each event
-- ARGV[1] span = 2^time_bits   ARGV[2] max_points (exact capacity)   ARGV[3] S   ARGV[4] B
-- ARGV[5] dense (0/1)          ARGV[6] dedup TTL seconds
-- ARGV[7 .. 6+S+B]             TTL per board in seconds, 0 for none
-- then 7 values per event: event id, dedup key index (into KEYS), dedup field, player id,
--                          points, reached second (from the season's start), dedup tag
--                          (boards/keys.py dedup_tag: a marker with another tag is another event's)
-- Returns {"paused"} when the game is paused (nothing written), else
--         {"ok", applied count, skipped count, overflow event ids...}.
--
-- Score layout and rules: ranking_lib.lua's sum_score and best_score. Sums are order-independent,
-- so events may arrive in any order; redeliveries are skipped by the dedup marker.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'paused'}
end

local span = tonumber(ARGV[1])
local max_points = tonumber(ARGV[2])
local n_sum = tonumber(ARGV[3])
local n_best = tonumber(ARGV[4])
local dense = ARGV[5] == '1'
local dedup_ttl = tonumber(ARGV[6])
local n_boards = n_sum + n_best
local first_event_arg = 7 + n_boards
local first_version_key = 3 + n_boards
if dense then first_version_key = first_version_key + n_boards end

-- A board's version goes up with every change. A version key that is new starts at the server's
-- clock in microseconds, so a board that expired or was flushed never repeats an old version.
local function bump_version(key, now, ttl)
  if redis.call('EXISTS', key) == 0 then
    redis.call('SET', key, fmt(tonumber(now[1]) * 1000000 + tonumber(now[2])))
  end
  redis.call('INCR', key)
  if ttl > 0 then redis.call('EXPIRE', key, ttl) end
end

local function distinct_update(board_index, old_points, new_points)
  if not dense then return end
  local board = KEYS[2 + board_index]
  local companion = KEYS[2 + n_boards + board_index]
  companion_add(companion, new_points)
  if old_points ~= nil and old_points ~= new_points then
    companion_drop(board, companion, span, old_points)
  end
end

local applied, skipped = 0, 0
local overflow = {}
local touched_dedup = {}
local new_scores = {}
local old_points = {}

for i = first_event_arg, #ARGV, 7 do
  local event_id = ARGV[i]
  local dedup_key = KEYS[tonumber(ARGV[i + 1])]
  local field = ARGV[i + 2]
  local player = ARGV[i + 3]
  local pts = tonumber(ARGV[i + 4])
  local t = tonumber(ARGV[i + 5])
  local tag = ARGV[i + 6]
  if redis.call('HGET', dedup_key, field) == tag then
    skipped = skipped + 1
  elseif redis.call('SISMEMBER', KEYS[2], player) == 1 then
    -- A hidden player's result is in the ledger; it reaches the boards if they are shown again.
    redis.call('HSET', dedup_key, field, tag)
    touched_dedup[dedup_key] = true
    applied = applied + 1
  else
    -- Every check before the first write: compute all new scores, refuse the event on overflow.
    local ok = true
    for b = 1, n_boards do
      local key = KEYS[2 + b]
      local old = redis.call('ZSCORE', key, player)
      local new
      if b <= n_sum then
        local new_points
        new, old_points[b], new_points = sum_score(old, pts, t, span)
        if new_points > max_points then ok = false end
      else
        new, old_points[b] = best_score(old, pts, t, span)
        if pts > max_points then ok = false end
      end
      new_scores[b] = new
    end
    if not ok then
      overflow[#overflow + 1] = event_id
    else
      redis.call('HSET', dedup_key, field, tag)
      touched_dedup[dedup_key] = true
      for b = 1, n_boards do
        local new = new_scores[b]
        if new then
          redis.call('ZADD', KEYS[2 + b], fmt(new), player)
          distinct_update(b, old_points[b], math.floor(new / span))
        end
      end
      applied = applied + 1
    end
  end
end

if applied > 0 then
  local now = redis.call('TIME')
  for b = 1, n_boards do
    local ttl = tonumber(ARGV[6 + b])
    bump_version(KEYS[first_version_key + b - 1], now, ttl)
    if ttl > 0 then
      redis.call('EXPIRE', KEYS[2 + b], ttl)
      if dense then redis.call('EXPIRE', KEYS[2 + n_boards + b], ttl) end
    end
  end
  for key, _ in pairs(touched_dedup) do
    redis.call('EXPIRE', key, dedup_ttl)
  end
end

local reply = {'ok', applied, skipped}
for _, id in ipairs(overflow) do reply[#reply + 1] = id end
return reply
