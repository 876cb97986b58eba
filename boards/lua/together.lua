-- Several read scripts in one call, with the game's catalog version: the fast entrance's way of
-- reading (boards/fastpath.py). In front of this file stand the scripts' libraries, then
-- `local reads = {}` and each read script as `reads[i] = function(KEYS, ARGV) <script> end` (its
-- KEYS and ARGV are the function's parameters: its own slice of the call's).
-- KEYS: each read's keys, in order, then the catalog's version key (last).
-- ARGV[1] each read's number of keys, then each read's number of arguments, as decimal numbers
--   separated by spaces ("5 1 4 0" for two reads); then each read's arguments, in order.
-- Returns {the catalog's version or false, the first read's reply, the second's, ...}.
local counts = {}
for c in string.gmatch(ARGV[1], '%d+') do counts[#counts + 1] = tonumber(c) end
local n = #counts / 2
local out = {redis.call('GET', KEYS[#KEYS])}
local k, a = 1, 2
for i = 1, n do
  local nk, na = counts[i], counts[n + i]
  local keys, args = {}, {}
  for j = 1, nk do keys[j] = KEYS[k + j - 1] end
  for j = 1, na do args[j] = ARGV[a + j - 1] end
  k, a = k + nk, a + na
  out[i + 1] = reads[i](keys, args)
end
return out
