-- One league cohort as it stands, for the cohort read and the player read of both entrances
-- (competitions/league_standings.py): the seat looked up, then the cohort's board whole.
--
-- KEYS[1]  the period's player map (a hash: player -> "division:number")
-- KEYS[2]  the period's counters (a hash: "c:D:N" the size of cohort N of D; field "" = filled)
-- KEYS[3]  the game's hidden (privacy) and deleted players (a set)
-- KEYS[4]  the game's display names (a hash)
-- ARGV[1]  the player whose cohort is read ("" for a cohort read)
-- ARGV[2]  the cohort "D:N" of a cohort read ("" for a player read)
-- ARGV[3]  the period's cohort board key with %D and %N for the division and the number
-- ARGV[4]  "1": the seat is checked against the period's state (the fast entrance, which has no
--          other source); "0": the caller decided the seat (ARGV[2]) from PostgreSQL
-- Returns  "load" when the state is not filled (with ARGV[4] "1"); else {seat or false, then per
--          member not hidden: member, encoded score, display name or false}, in no particular
--          order (the caller sorts by the tie rule's display order). seat false: the player has
--          no seat in the period, or the cohort has no member.
-- Reads only.

local seat = ARGV[2]
if ARGV[4] == '1' then
  if redis.call('HEXISTS', KEYS[2], '') == 0 then
    return 'load'
  end
  if ARGV[1] ~= '' then
    seat = redis.call('HGET', KEYS[1], ARGV[1])
    if not seat then
      return {false}
    end
  elseif tonumber(redis.call('HGET', KEYS[2], 'c:' .. seat) or '0') < 1 then
    return {false}
  end
end
local division, number = string.match(seat, '^(%d+):(%d+)$')
local board = string.gsub(string.gsub(ARGV[3], '%%D', division), '%%N', number)
local raw = redis.call('ZRANGE', board, 0, -1, 'WITHSCORES')
local out = {seat}
if #raw == 0 then
  return out
end
local members = {}
for i = 1, #raw, 2 do
  members[#members + 1] = raw[i]
end
local hidden = redis.call('SMISMEMBER', KEYS[3], unpack(members))
local names = redis.call('HMGET', KEYS[4], unpack(members))
for i, member in ipairs(members) do
  if hidden[i] == 0 then
    out[#out + 1] = member
    out[#out + 1] = raw[2 * i]
    out[#out + 1] = names[i] or false
  end
end
return out
