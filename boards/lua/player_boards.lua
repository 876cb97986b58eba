-- One player's standing on several boards of a season at once (the player's boards read).
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] display names hash, then for each board: the board, its distinct-points companion
-- ARGV[1] player id   ARGV[2] span = 2^time_bits   ARGV[3] tie rule
-- ARGV[4] exact ranks   ARGV[5] histogram buckets (as player.lua)
-- Returns {display name or false, then for each board: {} when the player is not on it, else
--          {points, rank, total, players with strictly fewer points, below, own}}.
local span, exact, buckets = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
local reply = {redis.call('HGET', KEYS[1], ARGV[1])}
for i = 2, #KEYS, 2 do
  reply[#reply + 1] = standing_of(KEYS[i], KEYS[i + 1], span, ARGV[3], ARGV[1], exact, buckets) or {}
end
return reply
