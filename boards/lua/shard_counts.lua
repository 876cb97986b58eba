-- One shard's part of a rank on a board split by player (boards/sharded.py adds up the shards').
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] the shard's sorted set
-- ARGV[1] an encoded score s   ARGV[2] a player id m   ARGV[3] span = 2^time_bits
-- ARGV[4] histogram buckets (0: skip the histogram)
-- Returns {members, members with more points than s's, members with a higher score than s,
--          members with score s and an id before m, members with fewer points than s's,
--          below, own}: below and own are the players of this shard's equi-depth histogram
--          buckets wholly under s's points and in its bucket (-1, -1 when skipped or empty).
local key = KEYS[1]
local s = ARGV[1]
local span = tonumber(ARGV[3])
local p = points_of(s, span)
local total = redis.call('ZCARD', key)
local higher_points = more_points(key, span, p)
local higher = redis.call('ZCOUNT', key, '(' .. s, '+inf')
local before = 0
if redis.call('ZCOUNT', key, s, s) > 0 then before = ids_before(key, s, ARGV[2]) end
local lower = fewer_points(key, span, p)
local below, own = -1, -1
if tonumber(ARGV[4]) > 0 and total > 0 then
  below, own = histogram_bucket(key, span, total, tonumber(ARGV[4]), p)
end
return {total, higher_points, higher, before, lower, below, own}
