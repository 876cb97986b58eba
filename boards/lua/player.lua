-- One player's standing on a board.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- ARGV[1] player id   ARGV[2] span = 2^time_bits   ARGV[3] tie rule
-- Returns {} when the player is not on the board, else
--         {points, rank, total, players with strictly fewer points, display name or false}.
local span = tonumber(ARGV[2])
local position, score = position_of(KEYS[1], ARGV[1])
if position == nil then return {} end
local p = points_of(score, span)
local rank = rank_of(KEYS[1], KEYS[2], span, ARGV[3], score, position)
local total = redis.call('ZCARD', KEYS[1])
local lower = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. fmt(p * span))
local name = redis.call('HGET', KEYS[3], ARGV[1])
return {p, rank, total, lower, name}
