-- A player and their friends with a score on the board, each with their rank on the whole board.
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- KEYS[4] the player's friends (a set)
-- ARGV[1] player id   ARGV[2] span = 2^time_bits   ARGV[3] tie rule   ARGV[4] most friends read
-- Returns {member, points, board rank, name, ...} for those on the board, in display order of
-- the members' scores (the caller ranks them among themselves).
local friends = redis.call('SMEMBERS', KEYS[4])
table.sort(friends)
local members = {ARGV[1]}
for i = 1, math.min(#friends, tonumber(ARGV[4])) do members[#members + 1] = friends[i] end
local span = tonumber(ARGV[2])
local found = {}
for _, m in ipairs(members) do
  local position, score = position_of(KEYS[1], m)
  if position ~= nil then found[#found + 1] = {m, score, position} end
end
table.sort(found, function(a, b) return a[3] < b[3] end)
local names = {}
if #found > 0 then
  local ids = {}
  for i, f in ipairs(found) do ids[i] = f[1] end
  names = redis.call('HMGET', KEYS[3], unpack(ids))
end
local reply = {}
for i, f in ipairs(found) do
  reply[#reply + 1] = f[1]
  reply[#reply + 1] = points_of(f[2], span)
  reply[#reply + 1] = rank_of(KEYS[1], KEYS[2], span, ARGV[3], f[2], f[3])
  reply[#reply + 1] = names[i] or false
end
return reply
