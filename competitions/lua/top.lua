-- The top n of a tournament period's board in display order, ranked by the game's tie rule, with
-- each player's counted attempts; nothing when the caller's copy is current. Needs ranking_lib.lua
-- and standing_lib.lua joined in front.
-- KEYS[1] board   KEYS[2] distinct-points companion (dense)   KEYS[3] display names hash
-- KEYS[4] the period's attempts (a hash)   KEYS[5] its entrants (a set)
-- KEYS[6] the game's hidden and deleted players (a set; on a cluster the period slot's copy):
--         unread here (hidden players are off the board)
-- KEYS[7] the board's version   KEYS[8] the game's names version
-- ARGV[1] n   ARGV[2] span = 2^time_bits   ARGV[3] tie rule   ARGV[4] the version the caller holds
-- The version: the board's, the names', and the attempts' (enter.lua and enter_undo.lua bump the
-- field ATTEMPTS_VERSION of the attempts hash: an attempt can change without the board changing).
-- Returns 'load' when the counters are not filled; {version} when it equals ARGV[4]; else
--         {version, total, member, points, rank, name, attempts, member, ...}.
if not counters_filled(KEYS[4], KEYS[5]) then return 'load' end
local version = (redis.call('GET', KEYS[7]) or '0') .. '.' .. (redis.call('GET', KEYS[8]) or '0') .. '.'
  .. (redis.call('HGET', KEYS[4], ATTEMPTS_VERSION) or '0')
if version == ARGV[4] then return {version} end
local slice = ordered_slice(KEYS[1], 0, tonumber(ARGV[1]) - 1)
local reply = with_attempts(entries_reply(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[2]), ARGV[3], slice), KEYS[4])
table.insert(reply, 1, redis.call('ZCARD', KEYS[1]))
table.insert(reply, 1, version)
return reply
