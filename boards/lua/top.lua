-- Top N of a board in display order, with ranks by the tie rule.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- ARGV[1] n   ARGV[2] span = 2^time_bits   ARGV[3] tie rule (competition, dense, first)
-- Returns {total, member, points, rank, name, member, points, rank, name, ...}.
local n = tonumber(ARGV[1])
local span = tonumber(ARGV[2])
local slice = ordered_slice(KEYS[1], 0, n - 1)
local reply = entries_reply(KEYS[1], KEYS[2], KEYS[3], span, ARGV[3], slice)
table.insert(reply, 1, redis.call('ZCARD', KEYS[1]))
return reply
