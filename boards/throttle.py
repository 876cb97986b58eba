"""The public read throttle: a token bucket per client address, kept in each web process's memory
(READ_RATE_PER_S, READ_RATE_BURST: per process; 0 switches it off).

Per process, not in Redis: a read is one Redis call, and the throttle's bucket would be a second
one on every read for what is a guard against one address flooding the service, not a quota. With
N web processes an address that spreads its connections over them gets up to N times the rate (a
connection stays on one process: the kernel picks the process per connection, leaderboard_site/
serve.py). It does not depend on Redis, so it keeps working while Redis is down (the reads then
answer 503 anyway). Both entrances spend the same bucket through `reader_throttle`; an address
over its rate gets `throttled_error`.
"""

from datetime import datetime

from django.conf import settings

from common.api_errors import THROTTLED, ApiError
from common.ratelimit import LocalBuckets, retry_after_s

THROTTLE_SPENT = "leaderboard.read_token_spent"  # scope flag: the fast entrance spent this read's token

_buckets = LocalBuckets(max_keys=100_000)


def reader_throttle(*, address: str, now: datetime) -> int | None:
    """Spend one token of the address's bucket: None if allowed, else Retry-After seconds."""
    rate = int(settings.READ_RATE_PER_S)
    if rate == 0 or not address:
        return None
    granted, wait_ms = _buckets.take(
        address,
        1,
        now_ms=int(now.timestamp() * 1000),
        capacity=max(int(settings.READ_RATE_BURST), 1),
        ms_per_token=1000 / rate,
    )
    return None if granted else retry_after_s(wait_ms)


def reader_buckets_forget() -> None:
    """Every address's bucket full again (tests)."""
    _buckets.clear()


def throttled_error(retry_after: int) -> ApiError:
    return THROTTLED(f"Too many reads from this address; retry in {retry_after} s.", {"Retry-After": str(retry_after)})
