-- The player buckets of a whole batch, judged in one call (anticheat.services.results_judge).
-- Needs common/lua/bucket_lib.lua joined in front.
--
-- Each player wants one token per result still accepted after the ban and plausibility rules.
-- The tokens go through two buckets in turn: matches per hour first, then the burst bucket;
-- a result the first refuses does not spend from the second.
--
-- ARGV[1]      now, in milliseconds
-- ARGV[2..4]   hourly bucket: capacity (0 = off), ms per token, TTL in seconds
-- ARGV[5..7]   burst bucket: capacity (0 = off), ms per token, TTL in seconds
-- ARGV[8..]    tokens wanted, one value per player
-- KEYS         per player, in the order of ARGV: its hourly bucket (when on), its burst bucket
--              (when on)
-- Returns, per player, two integers: the results that passed the hourly bucket, and of those,
-- the results that passed the burst bucket too.

local now = tonumber(ARGV[1])
local hourly_capacity, hourly_per, hourly_ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local burst_capacity, burst_per, burst_ttl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local keys_per_player = 0
if hourly_capacity > 0 then keys_per_player = keys_per_player + 1 end
if burst_capacity > 0 then keys_per_player = keys_per_player + 1 end

local reply = {}
local k = 1
for i = 8, #ARGV do
  local want = tonumber(ARGV[i])
  local hourly_passed = want
  if hourly_capacity > 0 then
    hourly_passed = bucket_take(KEYS[k], want, now, hourly_capacity, hourly_per, hourly_ttl)
    k = k + 1
  end
  local burst_passed = hourly_passed
  if burst_capacity > 0 then
    if hourly_passed > 0 then
      burst_passed = bucket_take(KEYS[k], hourly_passed, now, burst_capacity, burst_per, burst_ttl)
    end
    k = k + 1
  end
  reply[#reply + 1] = hourly_passed
  reply[#reply + 1] = burst_passed
end
return reply
