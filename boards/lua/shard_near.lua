-- One shard's entries nearest to a position of the display order (score descending, then player
-- id): the w entries just before (score s, player m) and the w just after, for a merged "around".
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] the shard's sorted set   ARGV[1] score s   ARGV[2] player m   ARGV[3] w
-- Returns {member, score, ...}: those entries, in no particular order (m itself left out).
local key, s, m, w = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local reply = {}
local function add(flat)
  for i = 1, #flat, 2 do
    reply[#reply + 1] = flat[i]
    reply[#reply + 1] = flat[i + 1]
  end
end
if w <= 0 then return reply end
-- Score s itself: ids before m come before it, ids after m after it.
local before, after = {}, {}
if redis.call('ZCOUNT', key, s, s) > 0 then before, after = tie_split(key, s, m) end
for i = math.max(1, #before - w + 1), #before do add({before[i], s}) end
for i = 1, math.min(w, #after) do add({after[i], s}) end
-- Higher scores, nearest first. The farthest score reached may hold more players than fit: of
-- those, the ones nearest (the last ids of its group) are taken.
local up = redis.call('ZRANGEBYSCORE', key, '(' .. s, '+inf', 'WITHSCORES', 'LIMIT', 0, w)
if #up > 0 then
  local far = up[#up]
  local inside = {}
  for i = 1, #up, 2 do
    if up[i + 1] ~= far then inside[#inside + 1] = up[i] inside[#inside + 1] = up[i + 1] end
  end
  add(inside)
  local k = w - #inside / 2
  local group = redis.call('ZCOUNT', key, far, far)
  add(redis.call('ZRANGEBYSCORE', key, far, far, 'WITHSCORES', 'LIMIT', math.max(0, group - k), k))
end
-- Lower scores, nearest first; of the farthest score's group, the first ids.
local down = redis.call('ZREVRANGEBYSCORE', key, '(' .. s, '-inf', 'WITHSCORES', 'LIMIT', 0, w)
if #down > 0 then
  local far = down[#down]
  local inside = {}
  for i = 1, #down, 2 do
    if down[i + 1] ~= far then inside[#inside + 1] = down[i] inside[#inside + 1] = down[i + 1] end
  end
  add(inside)
  local k = w - #inside / 2
  add(redis.call('ZRANGEBYSCORE', key, far, far, 'WITHSCORES', 'LIMIT', 0, k))
end
return reply
