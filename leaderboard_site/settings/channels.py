"""Channels: the Redis layer (channels-redis)."""

from .redis import REDIS_URL

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": "lb:asgi"},
    }
}
