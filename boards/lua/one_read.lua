-- One read script with the game's catalog version, in one call: a hot read of the fast entrance
-- (boards/fastpath.py). In front of this file stand the script's libraries, then `local reads = {}`
-- and the script as `reads[1] = function(KEYS, ARGV) <script> end`.
-- KEYS: the read's keys, then the catalog's version key (last). ARGV: the read's.
-- Returns {the catalog's version or false, the read's reply}.
local keys = {}
for i = 1, #KEYS - 1 do keys[i] = KEYS[i] end
return {redis.call('GET', KEYS[#KEYS]), reads[1](keys, ARGV)}
