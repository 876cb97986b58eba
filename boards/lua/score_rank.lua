-- The rank a score would have on a board now, nobody being added (rank?score=), or one shard's
-- part of it (boards/sharded.py adds the shards' up).
-- Needs ranking_lib.lua joined in front.
-- KEYS[1] board (or a shard)   KEYS[2] distinct-points companion (dense)
-- ARGV[1] the stored points p of the score (-1: below every score; past the capacity: above)
-- ARGV[2] span = 2^time_bits   ARGV[3] tie rule   ARGV[4] exact ranks (the percentile is exact
-- down to this rank; 0: always the histogram)   ARGV[5] histogram buckets
-- Returns {rank, total, players with strictly fewer points, below, own} (ranking_lib's score_rank).
return score_rank(KEYS[1], KEYS[2], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5]))
