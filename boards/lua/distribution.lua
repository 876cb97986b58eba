-- The board's equi-depth score histogram; nothing when the caller's copy is current.
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] the board's version
-- ARGV[1] span = 2^time_bits   ARGV[2] buckets   ARGV[3] the version the caller holds ("" for none)
-- Returns {version} when it equals ARGV[3], else {version, total, low, high, players, ...}: points
-- bounds (inclusive, ascending, disjoint; equal points always share a bucket) and head counts.
local version = redis.call('GET', KEYS[2]) or '0'
if version == ARGV[3] then return {version} end
local span = tonumber(ARGV[1])
local total = redis.call('ZCARD', KEYS[1])
local reply = {version, total}
if total == 0 then return reply end
local count = math.min(tonumber(ARGV[2]), total)
local lows = {}
for i = 0, count - 1 do
  local low = points_at(KEYS[1], span, math.floor(i * total / count))
  if #lows == 0 or lows[#lows] ~= low then lows[#lows + 1] = low end
end
local top = points_at(KEYS[1], span, total - 1)
for i, low in ipairs(lows) do
  local high = top
  if i < #lows then high = lows[i + 1] - 1 end
  reply[#reply + 1] = low
  reply[#reply + 1] = high
  reply[#reply + 1] = redis.call('ZCOUNT', KEYS[1], fmt(low * span), fmt((high + 1) * span - 1))
end
return reply
