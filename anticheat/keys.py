"""Every Redis key of anti-cheat (prefix `lb` by default, REDIS_KEY_PREFIX):
    lb:rl:k:{key_id}            a server key's request bucket
    lb:rl:p:{game}:{player}     a player's result bucket (bursts go to review, reason `rate`)
    lb:rl:h:{game}:{player}     a player's matches-per-hour bucket (`matches_per_hour`)
Buckets are hashes (tokens, last refill), spent by common/lua/token_bucket.lua (server keys) and
anticheat/lua/judge.lua (a batch's player buckets, both kinds in one call).
"""

from common.redis import key_prefix


def server_key_bucket_key(key_id: str) -> str:
    return f"{key_prefix()}:rl:k:{key_id}"


def player_bucket_key(game: str, player_id: str) -> str:
    return f"{key_prefix()}:rl:p:{game}:{player_id}"


def player_hourly_bucket_key(game: str, player_id: str) -> str:
    return f"{key_prefix()}:rl:h:{game}:{player_id}"
