-- What the tournament board reads share (top.lua, player.lua, around.lua); boards/lua/ranking_lib.lua
-- is joined in front of it (competitions/standings.py).
--
-- A period's counters are an index of the database: an attempts hash or entrants set without its
-- "filled" mark ("") has lost its data (or never had any), and a read of it answers 'load': its
-- caller fills them from the database and reads again (the fast entrance hands the request to
-- Django, which does).
-- The attempts hash's field counting its changes (enter.lua, enter_undo.lua): not a player id
-- (ids never hold '#'), read by top.lua as part of its version.
local ATTEMPTS_VERSION = '#v'

local function counters_filled(attempts, entrants)
  return redis.call('HEXISTS', attempts, '') == 1 and redis.call('SISMEMBER', entrants, '') == 1
end

-- Entries as ranking_lib's entries_reply gives them (member, points, rank, name, ...), each with
-- the player's counted attempts after its name.
local function with_attempts(entries, attempts)
  local members = {}
  for i = 1, #entries, 4 do members[#members + 1] = entries[i] end
  local counts = {}
  if #members > 0 then counts = redis.call('HMGET', attempts, unpack(members)) end
  local reply = {}
  for i = 1, #entries, 4 do
    reply[#reply + 1] = entries[i]
    reply[#reply + 1] = entries[i + 1]
    reply[#reply + 1] = entries[i + 2]
    reply[#reply + 1] = entries[i + 3]
    reply[#reply + 1] = tonumber(counts[(i + 3) / 4] or '0')
  end
  return reply
end
