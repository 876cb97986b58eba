"""Counters and gauges kept in Redis (one hash), read by `/metrics` (leaderboard_site/metrics.py):
the ones counted by several processes and hosts at once, cluster-wide. What one process counts for
itself goes through common/observability.py instead. A metric never fails the
request or job that counts it. Fields: `refused:{code}:{game}`, `reconcile_drift:{game}` (board
entries that differed from the ledger), `reconcile_last_drift:{game}` and `reconcile_last_run:{game}`
(gauges: the last run's drift and its Unix time), `boards_recoveries` (Redis found empty and the
boards rebuilt), `boards_recovery_ms` (gauge: how long the last one took) and `redis_failovers`
(another Redis server found answering: scoring/failover.py). A Redis that lost
its data lost these too: Prometheus reads the reset as a counter restart."""

import redis

from . import redis as lb_redis

# Re-exported: the recovery (scoring/recovery.py) keeps this key when it empties Redis.
from .keys import metrics_key


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
    return counters_read() or {}


def counters_read() -> dict[str, int] | None:
    """Every counter and gauge; None when Redis cannot answer (not the same as none counted yet:
    /metrics then leaves them out instead of showing the counters fall to 0)."""
    try:
        raw = lb_redis.client().hgetall(metrics_key())
    except redis.RedisError:
        return None
    return {str(k): int(v) for k, v in raw.items()}
