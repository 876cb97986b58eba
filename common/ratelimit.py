"""Token buckets in Redis, spent atomically by one Lua call for many keys (the caller spells the
keys and passes its clock)."""

from datetime import datetime
from typing import Any

from . import redis as lb_redis

BUCKET_LIB = lb_redis.lua_path(__file__, "bucket_lib.lua")  # for scripts of other apps that take tokens
_BUCKET = lb_redis.lua_path(__file__, "bucket_lib.lua", "token_bucket.lua")


def bucket_ttl_s(*, capacity: int, ms_per_token: float) -> int:
    """How long an idle bucket is kept: a full refill, and a minute more."""
    return int(capacity * ms_per_token / 1000) + 60


def bucket_call(
    *, keys: list[str], wants: list[int], capacity: int, ms_per_token: float, now: datetime
) -> tuple[str, list[str], list[Any]]:
    """The bucket script's path, KEYS and ARGV (for a caller that pipelines it with other work)."""
    ttl_s = bucket_ttl_s(capacity=capacity, ms_per_token=ms_per_token)
    return _BUCKET, keys, [int(now.timestamp() * 1000), capacity, ms_per_token, ttl_s, *wants]


def buckets_spend(
    *, keys: list[str], wants: list[int], capacity: int, ms_per_token: float, now: datetime
) -> list[tuple[int, int]]:
    """Take `wants[i]` tokens from bucket `keys[i]`; per bucket (granted, ms until the next token).

    Raises redis.RedisError when Redis is down: each caller decides whether to fail open."""
    path, script_keys, args = bucket_call(keys=keys, wants=wants, capacity=capacity, ms_per_token=ms_per_token, now=now)
    reply = lb_redis.lua_script(path)(keys=script_keys, args=args, client=lb_redis.client())
    return [(int(reply[i]), int(reply[i + 1])) for i in range(0, len(reply), 2)]


def retry_after_s(wait_ms: int) -> int:
    """Retry-After in whole seconds (API.md: always whole seconds, at least 1)."""
    return max(1, -(-wait_ms // 1000))
