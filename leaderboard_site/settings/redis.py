"""Redis: boards, dedup markers, rate buckets, the Celery broker and the Channels layer."""

from .env import env_float, env_str

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# Reads must fail fast (503) rather than hang when Redis is down.
REDIS_SOCKET_TIMEOUT_S = env_float("REDIS_SOCKET_TIMEOUT_S", 2.0)
# Every key this service writes starts with this prefix (see scoring/redis_boards.py).
REDIS_KEY_PREFIX = env_str("REDIS_KEY_PREFIX", "lb")
