-- One shard's part of the ranks of several entries on a board split by player (boards/sharded.py
-- adds up the shards'): one call per shard, whatever the number of entries.
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] the shard's sorted set
-- ARGV[1] span = 2^time_bits   ARGV[2] histogram buckets (0: skip the histogram)
-- ARGV[3], ARGV[4], ... pairs of an encoded score s and a player id m
-- Returns, for each pair in order, 7 numbers: {members, members with more points than s's,
--          members with a higher score than s, members with score s and an id before m, members
--          with fewer points than s's, below, own}: below and own are the players of this shard's
--          equi-depth histogram buckets wholly under s's points and in its bucket (-1, -1 when
--          skipped or empty). m need not be on this shard.
local key = KEYS[1]
local span = tonumber(ARGV[1])
local buckets = tonumber(ARGV[2])
local total = redis.call('ZCARD', key)
local reply = {}
for i = 3, #ARGV - 1, 2 do
  local s, m = ARGV[i], ARGV[i + 1]
  local p = points_of(s, span)
  local higher_points = more_points(key, span, p)
  local higher = redis.call('ZCOUNT', key, '(' .. s, '+inf')
  local before = 0
  if redis.call('ZCOUNT', key, s, s) > 0 then before = ids_before(key, s, m) end
  local lower = fewer_points(key, span, p)
  local below, own = -1, -1
  if buckets > 0 and total > 0 then
    below, own = histogram_bucket(key, span, total, buckets, p)
  end
  for _, x in ipairs({total, higher_points, higher, before, lower, below, own}) do reply[#reply + 1] = x end
end
return reply
