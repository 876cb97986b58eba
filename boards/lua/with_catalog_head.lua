-- The fast entrance's form of a read script: its reply with the game's catalog version in front, so
-- that a read and the check of the season it resolved are one call (boards/fastpath.py joins the
-- libraries, this file, the read script, then with_catalog_tail.lua).
-- KEYS: the read script's own, then the catalog's version key (last).
-- ARGV: the read script's.
-- Returns {catalog version or false, <the read script's reply>...}.
local function read()
