"""Every Redis key of the shared package: the only module of it that spells them (the prefix and
the Celery broker's keys, `broker_key`, are common/redis.py's).

Keys (prefix `lb` by default, REDIS_KEY_PREFIX):
    lb:metrics    the counters and gauges counted by several processes at once (a hash of
                  `refused:{code}:{game}` and the like, common/metrics.py), read by /metrics
"""

from .redis import key_prefix


def metrics_key() -> str:
    return f"{key_prefix()}:metrics"
