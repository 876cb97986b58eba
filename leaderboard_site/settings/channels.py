"""Channels: the Redis layer (channels-redis)."""

from .env import sentinel_primary_auth
from .redis import REDIS_KEY_PREFIX, REDIS_SENTINEL, REDIS_SENTINEL_KWARGS, REDIS_SENTINEL_MASTER, REDIS_URL

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # redis-py 8 reads with a 5 s socket timeout by default, exactly channels-redis's
            # BZPOPMIN wait: an idle consumer would die with TimeoutError. Give reads room.
            "hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
            "prefix": f"{REDIS_KEY_PREFIX}:asgi",
        },
    }
}
if REDIS_SENTINEL:  # channels-redis asks the sentinels itself (its own pool, not common/redis.py's)
    CHANNEL_LAYERS["default"]["CONFIG"]["hosts"] = [  # type: ignore[index]
        {
            "sentinels": REDIS_SENTINEL,
            "master_name": REDIS_SENTINEL_MASTER,
            "sentinel_kwargs": REDIS_SENTINEL_KWARGS,
            "socket_timeout": 30,
            **sentinel_primary_auth(REDIS_URL),
        }
    ]
