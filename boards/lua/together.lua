-- Several read scripts in one call, with the game's catalog version: the fast entrance's way of
-- reading (boards/fastpath.py). In front of this file stand the scripts' libraries, then
-- `local reads = {}` and each read script as `reads[i] = function(KEYS, ARGV) <script> end` (its
-- KEYS and ARGV are the function's parameters: its own slice of the call's).
-- KEYS: every key the reads name, each once, then the catalog's version key (last).
-- ARGV[1] each read's keys and number of arguments, reads separated by spaces: the places of its
--   keys in KEYS, separated by commas, then "/" and its number of arguments ("1,2,3/4 4/0 1,2,3/5"
--   for three reads of which the second has one key of its own and no arguments); then each
--   read's arguments, in order.
-- Returns {the catalog's version or false, the first read's reply, the second's, ...}.
local out = {redis.call('GET', KEYS[#KEYS])}
local a = 2
local i = 1
for places, count in string.gmatch(ARGV[1], '([%d,]*)/(%d+)') do
  local keys, args = {}, {}
  for place in string.gmatch(places, '%d+') do keys[#keys + 1] = KEYS[tonumber(place)] end
  for j = 1, tonumber(count) do args[j] = ARGV[a + j - 1] end
  a = a + tonumber(count)
  i = i + 1
  out[i] = reads[i - 1](keys, args)
end
return out
