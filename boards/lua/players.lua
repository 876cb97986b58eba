-- Several players' entries on a board at once (players?ids=), each as top.lua gives it.
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- ARGV[1] span = 2^time_bits   ARGV[2] tie rule   ARGV[3..] player ids (distinct)
-- Returns {member, points, rank, name, ...} for those on the board, in display order; the
-- others are not on it (the caller lists them as missing).
local span = tonumber(ARGV[1])
local found = {}
for i = 3, #ARGV do
  local position, score = position_of(KEYS[1], ARGV[i])
  if position ~= nil then found[#found + 1] = {ARGV[i], score, position} end
end
table.sort(found, function(a, b) return a[3] < b[3] end)
return entries_reply(KEYS[1], KEYS[2], KEYS[3], span, ARGV[2], found)
