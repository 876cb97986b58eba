"""Counters and gauges kept in Redis (one hash), read by `/metrics`. A metric never fails the
request or job that counts it. Fields: `refused:{code}:{game}`, `reconcile_drift:{game}` (board
entries that differed from the ledger), `reconcile_last_drift:{game}` and `reconcile_last_run:{game}`
(gauges: the last run's drift and its Unix time), `boards_recoveries` (Redis found empty and the
boards rebuilt) and `boards_recovery_ms` (gauge: how long the last one took). A Redis that lost
its data lost these too: Prometheus reads the reset as a counter restart."""

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


def gauge_set(field: str, value: int) -> None:
    try:
        lb_redis.client().hset(metrics_key(), field, value)
    except redis.RedisError:
        pass


def counters() -> dict[str, int]:
    """Every counter and gauge; empty when Redis is down."""
    try:
        raw = lb_redis.client().hgetall(metrics_key())
    except redis.RedisError:
        return {}
    return {str(k): int(v) for k, v in raw.items()}
