"""The public read throttle: a token bucket per client address (READ_RATE_PER_S, READ_RATE_BURST;
0 switches it off). Generous by default; it fails open when Redis is down (the read itself then
answers 503)."""

from datetime import datetime

import redis
from django.conf import settings

from common.ratelimit import buckets_spend, retry_after_s

from .keys import reader_bucket_key

THROTTLE_SPENT = "leaderboard.read_token_spent"  # scope flag: the fast path spent this read's token


def reader_throttle(*, address: str, now: datetime) -> int | None:
    """Spend one token of the address's bucket: None if allowed, else Retry-After seconds."""
    rate = int(settings.READ_RATE_PER_S)
    if rate == 0 or not address:
        return None
    try:
        [(granted, wait_ms)] = buckets_spend(
            keys=[reader_bucket_key(address)],
            wants=[1],
            capacity=max(int(settings.READ_RATE_BURST), 1),
            ms_per_token=1000 / rate,
            now=now,
        )
    except redis.RedisError:
        return None
    return None if granted else retry_after_s(wait_ms)
