-- Top N of a board in display order, with ranks by the tie rule; nothing when the caller's copy is
-- current (its version: the board's version and the game's names version, which the writer and
-- the correction script bump atomically with the data).
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- KEYS[4] the board's version   KEYS[5] the game's names version
-- ARGV[1] n   ARGV[2] span = 2^time_bits   ARGV[3] tie rule (competition, dense, first)
-- ARGV[4] the version the caller holds ("" for none)
-- Returns {version} when it equals ARGV[4], else
--         {version, total, member, points, rank, name, member, points, rank, name, ...}.
local version = (redis.call('GET', KEYS[4]) or '0') .. '.' .. (redis.call('GET', KEYS[5]) or '0')
if version == ARGV[4] then return {version} end
local n = tonumber(ARGV[1])
local span = tonumber(ARGV[2])
local slice = ordered_slice(KEYS[1], 0, n - 1)
local reply = entries_reply(KEYS[1], KEYS[2], KEYS[3], span, ARGV[3], slice)
table.insert(reply, 1, redis.call('ZCARD', KEYS[1]))
table.insert(reply, 1, version)
return reply
