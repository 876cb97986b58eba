-- The 2r+1 entries around a player on a tournament period's board, with their counted attempts;
-- near either end the window slides instead of shrinking. Needs ranking_lib.lua and
-- standing_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- KEYS[4] the period's attempts (a hash)   KEYS[5] its entrants (a set)
-- KEYS[6] the game's hidden and deleted players (a set; on a cluster the period slot's copy):
--         unread here (hidden players are off the board)
-- ARGV[1] player id   ARGV[2] r   ARGV[3] span = 2^time_bits   ARGV[4] tie rule
-- Returns 'load' when the counters are not filled, {} when the player is not on the board, else
--         {total, member, points, rank, name, attempts, ...}.
if not counters_filled(KEYS[4], KEYS[5]) then return 'load' end
local slice, total = around_slice(KEYS[1], ARGV[1], tonumber(ARGV[2]))
if slice == nil then return {} end
local reply = with_attempts(entries_reply(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[3]), ARGV[4], slice), KEYS[4])
table.insert(reply, 1, total)
return reply
