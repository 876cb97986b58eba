-- Apply accepted results to many boards of one game, each board with its own results, at most once
-- per result and board: apply_events.lua with one board (a sum or a best) per segment, for the
-- competition boards a batch touches (a league's opening rush puts nearly every result of a batch
-- in its own cohort board: one call here instead of one call a board). One Redis only: the boards
-- of one call lie in many hash tags (boards/writer.py makes per-board calls on a cluster).
-- Needs ranking_lib.lua joined in front (fmt, sum_score, best_score, the dense rule's companion_add,
-- _drop).
--
-- KEYS[1]        pause flag of the game (set while a rebuild swaps keys in)
-- KEYS[2]        the game's hidden players (a set): their results touch no board
-- KEYS[3 ..]     each board, then its distinct-points companion (dense boards only), then its
--                version; and the dedup hashes. Referenced by index from ARGV
-- ARGV[1]        dedup TTL seconds
-- ARGV[2]        P, the boards' kinds; then 5 values per kind: span = 2^time_bits, max_points
--                (exact capacity), best (0: sum, 1: best), dense (1: the board has a companion),
--                the boards' TTL seconds (0: none)
-- then per board, 3 values: its key's index, its kind (1 .. P), n = its results
--                and 7 values per result, as apply_events.lua: event id, dedup key index, dedup
--                field, player id, points, reached second (from the board's start), dedup tag
-- Returns {"paused"} when the game is paused (nothing written), else
--         {"ok", results applied to board 1, to board 2, ...} (a board whose results were all
--         skipped or refused for overflow counts 0).
--
-- The score rules are ranking_lib.lua's (sum_score, best_score), as apply_events.lua's for S + B =
-- 1: overflow refused before any write.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'paused'}
end

local hidden = KEYS[2]
local dedup_ttl = tonumber(ARGV[1])
local touched_dedup = {}
local now = nil
local reply = {'ok'}

-- A board's version goes up with every change; a new version key starts at the server's clock in
-- microseconds, plus one (apply_events.lua's rule, in two calls: a league's opening rush makes a
-- new board, and so a new version, for nearly every result).
local function bump_version(key, ttl)
  if redis.call('INCR', key) == 1 then  -- it was not there (a version is never 0)
    if now == nil then now = redis.call('TIME') end
    local first = fmt(tonumber(now[1]) * 1000000 + tonumber(now[2]) + 1)
    if ttl > 0 then
      redis.call('SET', key, first, 'EX', ttl)
    else
      redis.call('SET', key, first)
    end
  elseif ttl > 0 then
    redis.call('EXPIRE', key, ttl)
  end
end

local kinds = {}
local n_kinds = tonumber(ARGV[2])
for k = 1, n_kinds do
  local a = 3 + (k - 1) * 5
  kinds[k] = {tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2] == '1', ARGV[a + 3] == '1', tonumber(ARGV[a + 4])}
end

local i = 3 + 5 * n_kinds
while i <= #ARGV do
  local board_index = tonumber(ARGV[i])
  local kind = kinds[tonumber(ARGV[i + 1])]
  local n = tonumber(ARGV[i + 2])
  i = i + 3
  local span, max_points, best, dense, ttl = kind[1], kind[2], kind[3], kind[4], kind[5]
  local board = KEYS[board_index]
  local companion = nil
  local version = KEYS[board_index + 1]
  if dense then
    companion = KEYS[board_index + 1]
    version = KEYS[board_index + 2]
  end
  local applied = 0
  for j = i, i + 7 * (n - 1), 7 do
    local dedup_key = KEYS[tonumber(ARGV[j + 1])]
    local field = ARGV[j + 2]
    local player = ARGV[j + 3]
    local pts = tonumber(ARGV[j + 4])
    local t = tonumber(ARGV[j + 5])
    local tag = ARGV[j + 6]
    if redis.call('HGET', dedup_key, field) == tag then
      -- skipped: applied before
    elseif redis.call('SISMEMBER', hidden, player) == 1 then
      -- A hidden player's result is in the ledger; it reaches the board if they are shown again.
      redis.call('HSET', dedup_key, field, tag)
      touched_dedup[dedup_key] = true
      applied = applied + 1
    else
      -- Every check before the first write: the new score, the result refused on overflow.
      local old = redis.call('ZSCORE', board, player)
      local new, old_points, ok
      if best then
        new, old_points = best_score(old, pts, t, span)
        ok = pts <= max_points
      else
        local new_points
        new, old_points, new_points = sum_score(old, pts, t, span)
        ok = new_points <= max_points
      end
      if ok then
        redis.call('HSET', dedup_key, field, tag)
        touched_dedup[dedup_key] = true
        if new then
          redis.call('ZADD', board, fmt(new), player)
          if companion then
            local new_points = math.floor(new / span)
            companion_add(companion, new_points)
            if old_points ~= nil and old_points ~= new_points then
              companion_drop(board, companion, span, old_points)
            end
          end
        end
        applied = applied + 1
      end
    end
  end
  i = i + 7 * n
  if applied > 0 then
    bump_version(version, ttl)
    if ttl > 0 then
      redis.call('EXPIRE', board, ttl)
      if companion then redis.call('EXPIRE', companion, ttl) end
    end
  end
  reply[#reply + 1] = applied
end

for key, _ in pairs(touched_dedup) do
  redis.call('EXPIRE', key, dedup_ttl)
end

return reply
