"""The public read throttle: a token bucket per client address (READ_RATE_PER_S, READ_RATE_BURST;
0 switches it off). Generous by default; it fails open when Redis is down (the read itself then
answers 503).

Both entrances spend the same bucket with the same call: Django's views through `reader_throttle`,
the fast entrance (fastpath.py) by queueing `reader_bucket_call` in its read's pipeline and reading
the reply with `reader_verdict`. Either way an address over its rate gets `throttled_error`.
"""

from datetime import datetime
from typing import Any

import redis
from django.conf import settings

from common.api_errors import THROTTLED, ApiError
from common.ratelimit import bucket_call, bucket_call_run, retry_after_s

from .keys import reader_bucket_key

THROTTLE_SPENT = "leaderboard.read_token_spent"  # scope flag: the fast path spent this read's token

BucketCall = tuple[str, list[str], list[Any]]  # the bucket script's path, KEYS and ARGV


def reader_bucket_call(*, address: str, now: datetime) -> BucketCall | None:
    """The script call that spends one token of the address's bucket (None: the throttle is off)."""
    rate = int(settings.READ_RATE_PER_S)
    if rate == 0 or not address:
        return None
    return bucket_call(
        keys=[reader_bucket_key(address)],
        wants=[1],
        capacity=max(int(settings.READ_RATE_BURST), 1),
        ms_per_token=1000 / rate,
        now=now,
    )


def reader_verdict(reply: list[Any]) -> int | None:
    """The bucket script's reply for one token: None if granted, else Retry-After seconds."""
    granted, wait_ms = int(reply[0]), int(reply[1])
    return None if granted else retry_after_s(wait_ms)


def reader_throttle(*, address: str, now: datetime) -> int | None:
    """Spend one token of the address's bucket: None if allowed, else Retry-After seconds."""
    call = reader_bucket_call(address=address, now=now)
    if call is None:
        return None
    try:
        [spent] = bucket_call_run(call)
    except redis.RedisError:
        return None
    return reader_verdict(list(spent))


def throttled_error(retry_after: int) -> ApiError:
    return THROTTLED(f"Too many reads from this address; retry in {retry_after} s.", {"Retry-After": str(retry_after)})
