"""Redis: boards, dedup markers, rate buckets, Django's cache, the Celery broker and the Channels
layer."""

from urllib.parse import urlparse

from .env import (
    ConfigError,
    env_bool,
    env_float,
    env_int,
    env_str,
    key_prefix_from_env,
    sentinel_url,
    sentinels_from_env,
)

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# High availability: Redis Sentinels (`host:port,host:port,...`) and the name they know the primary
# by. Set, every client of REDIS_URL (the boards, markers, buckets, the fast entrance, Django's
# cache, the Celery broker, the Channels layer) asks the sentinels where the primary is, and again
# after a failover; REDIS_URL is then the sentinels in kombu's form (`sentinel://h:p/DB;...`, the
# database number and the primary's password taken from REDIS_URL's: the sentinels themselves are
# asked without one), and `make run` starts no Redis of its own.
REDIS_SENTINEL = sentinels_from_env("REDIS_SENTINEL")
REDIS_SENTINEL_MASTER = env_str("REDIS_SENTINEL_MASTER", "")
if REDIS_SENTINEL:
    if not REDIS_SENTINEL_MASTER:
        raise ConfigError("REDIS_SENTINEL_MASTER must name the primary when REDIS_SENTINEL is set")
    REDIS_URL = sentinel_url(REDIS_SENTINEL, REDIS_URL)
# How long the clients give a sentinel to answer where the primary is (each asked in turn).
REDIS_SENTINEL_KWARGS = {"socket_timeout": 1.0, "socket_connect_timeout": 0.25}
# A Redis Cluster for the boards (`redis://host:port` of any node; empty: the boards live on
# REDIS_URL). What goes there: every board's sorted sets, their companions and versions, the dedup
# markers, the display names, and per slot tag a copy of the game's pause flag and hidden players
# (boards/keys.py). What stays on REDIS_URL, and why: the Celery broker and the Channels layer
# (their clients speak to one Redis, not a cluster: kombu's and channels-redis' own connection
# code), the anti-cheat and read buckets, the locks, the season catalog, the live publisher's
# bookkeeping and the metrics (small, written by every request, never large enough to need
# sharding; on one Redis their scripts keep several keys atomic).
REDIS_CLUSTER_URL = env_str("REDIS_CLUSTER_URL", "")
# Board reads (top, rank, around, friends, distribution) from the cluster's replicas (READONLY,
# round robin over each slot's replicas) instead of its masters: more read capacity, at the price
# of answers as old as a replica's lag behind its master (the replication stream: well under a
# millisecond on one host, more under load; while a replica resyncs after a failover or a broken
# link, up to the cluster's node timeout and the resync). A score just applied may then show on a
# master-read endpoint before a replica-read one. Off by default: every read from the masters.
REDIS_CLUSTER_REPLICA_READS = env_bool("REDIS_CLUSTER_REPLICA_READS", False)
# Hedged reads on a cluster: a shard's read still unanswered after the process's recent p95 of a
# shard's read is sent again to another node of its slot (a replica: stale as above), and the first
# answer wins (boards/scatter.py). Cuts the tail of scatter-gathers over many shards; off by
# default, since the copy is a replica read.
REDIS_CLUSTER_HEDGE_READS = env_bool("REDIS_CLUSTER_HEDGE_READS", False)
# Reads must fail fast (503) rather than hang when Redis is down: a connection is given this long
# to open (a refused one fails at once; one that a dead host never answers, this long, twice), a
# command this long to answer.
REDIS_CONNECT_TIMEOUT_S = env_float("REDIS_CONNECT_TIMEOUT_S", 0.25)
REDIS_SOCKET_TIMEOUT_S = env_float("REDIS_SOCKET_TIMEOUT_S", 2.0)
# Redis connections of one web process's fast path (the hot reads, boards/fastpath.py): a read
# beyond them waits for a free one, up to REDIS_SOCKET_TIMEOUT_S.
REDIS_FAST_PATH_CONNECTIONS = env_int("REDIS_FAST_PATH_CONNECTIONS", 64)
# Every key this service writes starts with this prefix (common/redis.py lists who spells which):
# the boards, dedup markers, buckets, caches, the Celery queue (settings/celery.py) and the channel
# layer. It belongs to one deployment; by default it is named after the database (env.py), so
# deployments with different databases can share one Redis. Changing it leaves the old keys behind
# and the recovery rebuilds every board under the new one (boards/epoch.py).
REDIS_KEY_PREFIX = key_prefix_from_env()

# Django's cache (django-redis), for computed answers that may be thrown away; nothing keeps data
# in it today (the score histograms are board keys, boards/keys.py). A cache that cannot answer is
# a miss, never an error of its own.
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": f"{REDIS_KEY_PREFIX}:cache",
        "OPTIONS": {
            "SOCKET_CONNECT_TIMEOUT": REDIS_CONNECT_TIMEOUT_S,
            "SOCKET_TIMEOUT": REDIS_SOCKET_TIMEOUT_S,
            "IGNORE_EXCEPTIONS": True,
        },
    }
}
if REDIS_SENTINEL:  # django-redis's own Sentinel client: LOCATION names the primary, not a host
    _primary = urlparse(env_str("REDIS_URL", ""))
    _auth = f":{_primary.password}@" if _primary.password else ""
    CACHES["default"]["LOCATION"] = f"redis://{_auth}{REDIS_SENTINEL_MASTER}{_primary.path or '/0'}"
    CACHES["default"]["OPTIONS"].update(  # type: ignore[attr-defined]
        CLIENT_CLASS="django_redis.client.SentinelClient",
        CONNECTION_FACTORY="django_redis.pool.SentinelConnectionFactory",
        SENTINELS=REDIS_SENTINEL,
        SENTINEL_KWARGS=REDIS_SENTINEL_KWARGS,
    )
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
