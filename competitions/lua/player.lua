-- One player on a tournament period's board. Needs ranking_lib.lua and standing_lib.lua joined
-- in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- KEYS[4] the period's attempts (a hash)   KEYS[5] its entrants (a set)
-- KEYS[6] the game's hidden and deleted players (a set; on a cluster the period slot's copy)
-- ARGV[1] player id   ARGV[2] span = 2^time_bits   ARGV[3] tie rule
-- Returns 'load' when the counters are not filled; {} when the player is hidden or deleted, or
-- neither on the board nor an entrant (nor has a counted attempt); else {points or false, rank or
-- false, total, name or false, attempts} (points and rank false for an entrant with no score on
-- the board).
if not counters_filled(KEYS[4], KEYS[5]) then return 'load' end
local player = ARGV[1]
if redis.call('SISMEMBER', KEYS[6], player) == 1 then return {} end
local attempts = tonumber(redis.call('HGET', KEYS[4], player) or '0')
local total = redis.call('ZCARD', KEYS[1])
local name = redis.call('HGET', KEYS[3], player)
local position, score = position_of(KEYS[1], player)
if position == nil then
  if attempts == 0 and redis.call('SISMEMBER', KEYS[5], player) == 0 then return {} end
  return {false, false, total, name, attempts}
end
local span = tonumber(ARGV[2])
return {points_of(score, span), rank_of(KEYS[1], KEYS[2], span, ARGV[3], score, position), total, name, attempts}
