-- The tie rules on a sorted set: every script of boards/lua that ranks, orders tied entries or
-- keeps the dense rule's companion has this file joined in front (common.redis.lua_path in
-- boards/selectors.py, boards/sharded.py and boards/writer.py). Their Python twin is
-- boards/ranking.py; scoring/tests/test_tie_rules.py holds both, and the freeze's SQL, to the same
-- ranks.
--
-- A board's score is points * span + (span - 1 - reached second): equal points order by who
-- reached them first. Display order: score descending, then player id ascending. Redis orders
-- equal scores by member in reverse for ZREVRANGE, so equal-score groups are re-read in ascending
-- order here. Ranks never come from ZREVRANK alone: a rank is 1 + a count of what is above.
--   competition  players with strictly more points           (more_points)
--   dense        distinct points values above, read from the board's companion set of distinct
--                points (distinct_above), which the write scripts keep (companion_add, _drop)
--   first        entries ahead in display order: the position (position_of; ids_before for an
--                id that may be elsewhere)
-- Under competition and dense, equal points share a rank (shares_rank).

local function points_of(score, span)
  return math.floor(tonumber(score) / span)
end

local function fmt(x)
  return string.format('%.0f', x)
end

-- The writers' score rules (apply_events.lua, apply_boards.lua). Layout: points * span + (span - 1
-- - reached second). A sum board's new score after a result of `pts` points reached at second `t`
-- (old: the stored score, or nil), with the old points (nil: none) and the new: order-independent,
-- the reached second is the latest of the positive results (the earliest while all are zero).
local function sum_score(old, pts, t, span)
  if not old then return pts * span + (span - 1 - t), nil, pts end
  local oldv = tonumber(old)
  local op = math.floor(oldv / span)
  local ot = (span - 1) - (oldv - op * span)
  local nt
  if pts > 0 then
    if op == 0 then nt = t else nt = math.max(ot, t) end
  elseif op == 0 then
    nt = math.min(ot, t)
  else
    nt = ot
  end
  return (op + pts) * span + (span - 1 - nt), op, op + pts
end

-- A best board's new score, nil when the result does not raise it (only ever raised), with the old
-- points (nil: none).
local function best_score(old, pts, t, span)
  local new = pts * span + (span - 1 - t)
  if not old then return new, nil end
  local oldv = tonumber(old)
  if new <= oldv then new = nil end
  return new, math.floor(oldv / span)
end

-- Whether entries with equal points share a rank under `rule`.
local function shares_rank(rule)
  return rule ~= 'first'
end

-- Players with strictly more points than `p` (competition's count).
local function more_points(key, span, p)
  return redis.call('ZCOUNT', key, fmt((p + 1) * span), '+inf')
end

-- Players with strictly fewer points than `p` (the percentile's count).
local function fewer_points(key, span, p)
  return redis.call('ZCOUNT', key, '-inf', '(' .. fmt(p * span))
end

-- Distinct points values above `p`, from the board's companion (dense's count).
local function distinct_above(companion, p)
  return redis.call('ZCOUNT', companion, '(' .. fmt(p), '+inf')
end

-- The dense companion after a member of a board reached points `p`.
local function companion_add(companion, p)
  redis.call('ZADD', companion, p, fmt(p))
end

-- The dense companion after a member of `board` left points `p`: the value goes when nobody
-- holds it any more.
local function companion_drop(board, companion, span, p)
  local lo = p * span
  if redis.call('ZCOUNT', board, fmt(lo), fmt(lo + span - 1)) == 0 then
    redis.call('ZREM', companion, fmt(p))
  end
end

-- Of the members with score `s` (a tie even on reach time), how many come before id `m` in
-- display order (a smaller id). `m` need not be one of them (a shard's count for a player of
-- another shard).
local function ids_before(key, s, m)
  local before = 0
  for _, other in ipairs(redis.call('ZRANGEBYSCORE', key, s, s)) do
    if other < m then before = before + 1 end
  end
  return before
end

-- The members with score `s` other than `m`, split around it in display order: {ids before m},
-- {ids after m}.
local function tie_split(key, s, m)
  local before, after = {}, {}
  for _, other in ipairs(redis.call('ZRANGEBYSCORE', key, s, s)) do
    if other < m then before[#before + 1] = other elseif other > m then after[#after + 1] = other end
  end
  return before, after
end

-- Entries at display positions [start, stop] (0-based): a flat list of {member, score, position}.
local function ordered_slice(key, start, stop)
  local out = {}
  local raw = redis.call('ZREVRANGE', key, start, stop, 'WITHSCORES')
  if #raw == 0 then return out end
  -- Fast path: no two neighbours share a score, and the edges are not tied with outsiders.
  local simple = true
  for i = 4, #raw, 2 do
    if raw[i] == raw[i - 2] then simple = false break end
  end
  if simple then
    if redis.call('ZCOUNT', key, raw[2], raw[2]) > 1 or redis.call('ZCOUNT', key, raw[#raw], raw[#raw]) > 1 then
      simple = false
    end
  end
  if simple then
    for i = 1, #raw, 2 do
      out[#out + 1] = {raw[i], raw[i + 1], start + (i - 1) / 2}
    end
    return out
  end
  local pos = start
  local last = start + #raw / 2 - 1
  while pos <= last do
    local at = redis.call('ZREVRANGE', key, pos, pos, 'WITHSCORES')
    if #at == 0 then break end
    local s = at[2]
    local above = redis.call('ZCOUNT', key, '(' .. s, '+inf')
    local group = redis.call('ZCOUNT', key, s, s)
    local take = math.min(last, above + group - 1) - pos + 1
    local members = redis.call('ZRANGEBYSCORE', key, s, s, 'LIMIT', pos - above, take)
    for _, m in ipairs(members) do
      out[#out + 1] = {m, s, pos}
      pos = pos + 1
    end
  end
  return out
end

-- The display position of a member (0-based), or nil when it is not on the board.
local function position_of(key, member)
  local s = redis.call('ZSCORE', key, member)
  if not s then return nil end
  local above = redis.call('ZCOUNT', key, '(' .. s, '+inf')
  local group = redis.call('ZCOUNT', key, s, s)
  if group == 1 then return above, s end
  local members = redis.call('ZRANGEBYSCORE', key, s, s)
  for i, m in ipairs(members) do
    if m == member then return above + i - 1, s end
  end
  return above, s
end

-- The 2r+1 entries around `member` in display order (ordered_slice's), and the board's size; near
-- either end the window slides instead of shrinking. nil when the member is not on the board.
local function around_slice(key, member, r)
  local position = position_of(key, member)
  if position == nil then return nil end
  local total = redis.call('ZCARD', key)
  local width = 2 * r + 1
  local start = position - r
  if start + width > total then start = total - width end
  if start < 0 then start = 0 end
  return ordered_slice(key, start, start + width - 1), total
end

-- Rank of an entry with this score at this display position, by the game's tie rule.
local function rank_of(key, companion, span, rule, score, position)
  if not shares_rank(rule) then return position + 1 end
  local p = points_of(score, span)
  if rule == 'dense' then return 1 + distinct_above(companion, p) end
  return 1 + more_points(key, span, p)
end

-- Flat reply for entries: member, points, rank, display name (false when unknown). `slice` is in
-- display order; an entry right after the one before it (the next position) with fewer points
-- needs no count: everyone above it holds more points, so its competition rank is its position + 1
-- and its dense rank the one before + 1. Only the first entry, and any after a gap, are counted.
local function entries_reply(key, companion, names, span, rule, slice)
  local reply = {}
  local prev_points, prev_rank, prev_position = nil, nil, nil
  local members = {}
  for i, e in ipairs(slice) do members[i] = e[1] end
  local display = {}
  if #members > 0 then display = redis.call('HMGET', names, unpack(members)) end
  local shared = shares_rank(rule)
  for i, e in ipairs(slice) do
    local p = points_of(e[2], span)
    local rank
    if not shared then
      rank = e[3] + 1
    elseif p == prev_points then
      rank = prev_rank
    elseif prev_position ~= nil and e[3] == prev_position + 1 then
      if rule == 'dense' then rank = prev_rank + 1 else rank = e[3] + 1 end
    else
      rank = rank_of(key, companion, span, rule, e[2], e[3])
    end
    prev_points, prev_rank, prev_position = p, rank, e[3]
    reply[#reply + 1] = e[1]
    reply[#reply + 1] = p
    reply[#reply + 1] = rank
    reply[#reply + 1] = display[i] or false
  end
  return reply
end

-- The points of the entry at ascending position `position` (0 = the lowest score).
local function points_at(key, span, position)
  local at = redis.call('ZRANGE', key, position, position, 'WITHSCORES')
  return points_of(at[2], span)
end

-- The bucket of the equi-depth histogram (distribution.lua) that holds points `p`, without
-- building the histogram: its lows are the points at ascending positions floor(i * total / count),
-- so the bucket starts at the largest i whose position is below the players with points <= p.
-- Returns the players in buckets wholly below it, and in it: 0, 0 when nobody holds p or fewer
-- points (p is below the lowest bucket: a score asked about, or a shard's part of a rank).
local function histogram_bucket(key, span, total, buckets, p)
  local count = math.min(buckets, total)
  local at_or_below = redis.call('ZCOUNT', key, '-inf', fmt((p + 1) * span - 1))
  if at_or_below == 0 then return 0, 0 end
  local i = math.floor((at_or_below * count + total - 1) / total) - 1
  if i > count - 1 then i = count - 1 end
  local low = points_at(key, span, math.floor(i * total / count))
  local high
  if i + 1 < count then
    high = points_at(key, span, math.floor((i + 1) * total / count)) - 1
  else
    high = points_at(key, span, total - 1)
  end
  local below = redis.call('ZCOUNT', key, '-inf', '(' .. fmt(low * span))
  local own = redis.call('ZCOUNT', key, fmt(low * span), fmt((high + 1) * span - 1))
  return below, own
end

-- A member's standing: {points, rank, total, players with strictly fewer points, below, own}, or
-- nil when it is not on the board. Below rank `exact` the percentile comes from the equi-depth
-- histogram: below and own are its buckets wholly under the member's and the member's own
-- (histogram_bucket); -1, -1 when the percentile is exact.
local function standing_of(key, companion, span, rule, member, exact, buckets)
  local position, score = position_of(key, member)
  if position == nil then return nil end
  local p = points_of(score, span)
  local rank = rank_of(key, companion, span, rule, score, position)
  local total = redis.call('ZCARD', key)
  local lower = fewer_points(key, span, p)
  local below, own = -1, -1
  if rank > exact then below, own = histogram_bucket(key, span, total, buckets, p) end
  return {p, rank, total, lower, below, own}
end

-- The rank a player with points `p` would have now, nobody being added: under competition and
-- dense as any holder of p; under first as if p were reached now, after everyone already at p.
-- `p` may lie outside the board's points (-1: below every score; past the capacity: above).
-- Returns {rank, total, players with strictly fewer points, below, own} (standing_of's).
local function score_rank(key, companion, span, rule, p, exact, buckets)
  local rank
  if rule == 'first' then
    rank = 1 + redis.call('ZCOUNT', key, fmt(p * span), '+inf')
  elseif rule == 'dense' then
    rank = 1 + distinct_above(companion, p)
  else
    rank = 1 + more_points(key, span, p)
  end
  local total = redis.call('ZCARD', key)
  local lower = fewer_points(key, span, p)
  local below, own = -1, -1
  if rank > exact and total > 0 then below, own = histogram_bucket(key, span, total, buckets, p) end
  return {rank, total, lower, below, own}
end
