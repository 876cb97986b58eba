-- Regions a season's players now count in, added to its regions set when the set is there (a
-- missing set is built whole from the table by the next read: adding to it would make a partial one
-- look complete).
-- KEYS[1] the season's regions set (boards/keys.py regions_key)
-- ARGV the regions
-- Returns how many were new.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('SADD', KEYS[1], unpack(ARGV))
