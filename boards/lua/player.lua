-- One player's standing on a board, with what the percentile needs.
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- ARGV[1] player id   ARGV[2] span = 2^time_bits   ARGV[3] tie rule
-- ARGV[4] exact ranks (the percentile is exact down to this rank)   ARGV[5] histogram buckets
-- Returns {} when the player is not on the board, else
--         {points, rank, total, players with strictly fewer points, display name or false,
--          below, own}: below rank ARGV[4], the players in the equi-depth histogram's buckets wholly
--          under the player's, and in the player's own bucket (the percentile's error bound);
--          -1, -1 when the percentile is exact.
local found = standing_of(KEYS[1], KEYS[2], tonumber(ARGV[2]), ARGV[3], ARGV[1], tonumber(ARGV[4]), tonumber(ARGV[5]))
if found == nil then return {} end
local name = redis.call('HGET', KEYS[3], ARGV[1])
return {found[1], found[2], found[3], found[4], name, found[5], found[6]}
