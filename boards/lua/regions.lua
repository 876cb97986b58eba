-- A season's regions, as the game's answer and the page list them.
-- KEYS[1] the season's regions set (boards/keys.py regions_key)
-- Returns its members (none: not built yet; the reader builds it from the table).
return redis.call('SMEMBERS', KEYS[1])
