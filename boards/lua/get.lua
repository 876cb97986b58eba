-- A string's value, read beside a page's other reads (boards/fastpath.py: the game's links
-- document, pages.py `GameLinks`).
-- KEYS[1] the string's key. ARGV: none.
-- Returns its value, or nil when there is none.
return redis.call('GET', KEYS[1])
