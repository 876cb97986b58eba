-- Write the boards marker, but only while the recovery still holds its lock: a Redis flushed
-- during the recovery has lost the lock too, and the boards rebuilt before the flush with it, so
-- the marker must stay missing (the next check starts the recovery again).
--
-- KEYS[1]  the recovery's lock      KEYS[2]  the boards marker
-- ARGV[1]  the lock's token          ARGV[2]  the marker's new value
-- Returns 1 when the marker was written, 0 when the lock was not ours any more.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2])
return 1
