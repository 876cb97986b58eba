-- The 2r+1 entries around a player; near either end the window slides instead of shrinking.
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- ARGV[1] player id   ARGV[2] r   ARGV[3] span = 2^time_bits   ARGV[4] tie rule
-- Returns {} when the player is not on the board, else {total, member, points, rank, name, ...}.
local slice, total = around_slice(KEYS[1], ARGV[1], tonumber(ARGV[2]))
if slice == nil then return {} end
local reply = entries_reply(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[3]), ARGV[4], slice)
table.insert(reply, 1, total)
return reply
