"""Token buckets in Redis, spent atomically by one Lua call for many keys (the caller spells the
keys and passes its clock); and the same buckets in a process's memory, for while Redis cannot be
reached (`LocalBuckets`)."""

import math
import threading
from collections import OrderedDict
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
    return bucket_call_run(bucket_call(keys=keys, wants=wants, capacity=capacity, ms_per_token=ms_per_token, now=now))


def bucket_call_run(call: tuple[str, list[str], list[Any]]) -> list[tuple[int, int]]:
    """Run a `bucket_call`: per bucket (granted, ms until the next token)."""
    path, script_keys, args = call
    reply = lb_redis.lua_script(path)(keys=script_keys, args=args, client=lb_redis.client())
    return [(int(reply[i]), int(reply[i + 1])) for i in range(0, len(reply), 2)]


def retry_after_s(wait_ms: int) -> int:
    """Retry-After in whole seconds (docs/api.md: always whole seconds, at least 1)."""
    return max(1, -(-wait_ms // 1000))


class LocalBuckets:
    """Token buckets in this process's memory, with bucket_lib.lua's arithmetic: what a caller
    spends while Redis is unreachable, so a limit stays a limit (per process) instead of none.

    At most `max_keys` buckets are kept, the least recently used forgotten first (a forgotten
    bucket is full again). Their state never goes to Redis: once Redis answers again its buckets
    are the ones spent, as they were before the outage. Thread-safe.
    """

    def __init__(self, max_keys: int = 100_000) -> None:
        self.max_keys = max_keys
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, int]] = OrderedDict()  # key -> (tokens, last ms)

    def take(self, key: str, want: int, *, now_ms: int, capacity: int, ms_per_token: float) -> tuple[int, int]:
        """Up to `want` tokens from bucket `key`: (granted, ms until the next token when short)."""
        with self._lock:
            tokens, last = self._buckets.pop(key, (float(capacity), now_ms))
            if now_ms > last:
                tokens = min(float(capacity), tokens + (now_ms - last) / ms_per_token)
            granted = max(0, min(want, math.floor(tokens)))
            tokens -= granted
            self._buckets[key] = (tokens, max(now_ms, last))
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        wait = 0
        if granted < want:
            wait = max(1, math.ceil((1 - tokens) * ms_per_token))
        return granted, wait

    def spend(
        self, *, keys: list[str], wants: list[int], capacity: int, ms_per_token: float, now: datetime
    ) -> list[tuple[int, int]]:
        """`buckets_spend`, in this process's memory."""
        now_ms = int(now.timestamp() * 1000)
        return [
            self.take(key, want, now_ms=now_ms, capacity=capacity, ms_per_token=ms_per_token)
            for key, want in zip(keys, wants, strict=True)
        ]

    def clear(self) -> None:
        with self._lock:
            self._buckets.clear()
