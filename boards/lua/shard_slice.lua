-- One shard's top n in display order (score descending, then player id), for a merged top n.
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] the shard's sorted set   ARGV[1] n
-- Returns {members, member, score, member, score, ...}.
local reply = {redis.call('ZCARD', KEYS[1])}
for _, e in ipairs(ordered_slice(KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  reply[#reply + 1] = e[1]
  reply[#reply + 1] = e[2]
end
return reply
