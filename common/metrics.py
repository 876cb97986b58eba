"""Counters kept in Redis (one hash), read by `/metrics`. A metric never fails the request that
counts it."""

import redis

from . import redis as lb_redis


def metrics_key() -> str:
    """`{prefix}:metrics`: a hash of `refused:{code}:{game}` and the like."""
    return f"{lb_redis.key_prefix()}:metrics"


def count(field: str, amount: int = 1) -> None:
    try:
        lb_redis.client().hincrby(metrics_key(), field, amount)
    except redis.RedisError:
        pass


def counters() -> dict[str, int]:
    """Every counter; empty when Redis is down."""
    try:
        raw = lb_redis.client().hgetall(metrics_key())
    except redis.RedisError:
        return {}
    return {str(k): int(v) for k, v in raw.items()}
