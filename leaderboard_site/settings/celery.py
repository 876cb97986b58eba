"""Celery: at-least-once delivery (acks_late + reject on worker loss), no result backend."""

from .env import env_float, env_int, env_str
from .redis import REDIS_KEY_PREFIX, REDIS_SENTINEL_KWARGS, REDIS_SENTINEL_MASTER, REDIS_URL

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A lost broker (Redis down, restarted) is waited for forever, never given up on (Celery's default
# gives up after 100 attempts and the worker exits), and tried every second (the worker's consumer
# and beat's scheduler, leaderboard_site/celery.py), so the queue is worked again within a second
# of Redis's return.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A Redis that is starting again answers some commands with an error reply (LOADING inside a
# MULTI comes back as EXECABORT, a ResponseError: a "channel error" to kombu). Without this the
# consumer treats such a reply as fatal and the worker exits instead of reconnecting.
CELERY_BROKER_CHANNEL_ERROR_RETRY = True
CELERY_WORKER_CONSUMER = "leaderboard_site.celery:Consumer"
CELERY_BEAT_SCHEDULER = "leaderboard_site.celery:Scheduler"
# Tasks running when the broker goes cannot be acknowledged: they stop (their pool process is
# replaced) and come back, as Celery 6 will do by default. Every task is idempotent; the outbox
# relay re-sends the events of an apply that did not finish.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# An unacked task comes back after this; dedup markers outlive it by far (SCORING_DEDUP_TTL_S).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_S", 600),
    "socket_timeout": 5,
    "socket_connect_timeout": 1,
    # A publisher (the web's apply buffer, beat) tries a lost broker twice, at once, and gives up:
    # without these kombu retries for broker_connection_timeout (4 s) on every publish.
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
    # The queue, its unacked set and kombu's bindings under the deployment's prefix: two
    # deployments on one Redis never take each other's tasks (common/redis.py broker_key).
    "global_keyprefix": f"{REDIS_KEY_PREFIX}:celery:",
}
if CELERY_BROKER_URL.startswith("sentinel://"):  # kombu's sentinel transport: REDIS_SENTINEL's primary
    CELERY_BROKER_TRANSPORT_OPTIONS.update(master_name=REDIS_SENTINEL_MASTER, sentinel_kwargs=REDIS_SENTINEL_KWARGS)
# Publishing must not hang a request when the broker is down: the outbox relay covers it.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2}
CELERY_BEAT_RELAY_INTERVAL_S = env_float("CELERY_BEAT_RELAY_INTERVAL_S", 2.0)
# Celery's Django fixup closes every database connection before and after each task, and in a
# prefork child with a connection pool it closes the pool as well: a new PostgreSQL backend (a fork
# and a login) for each apply task, a fifth of the worker's CPU under single-result POSTs (tasks of
# a dozen events). A child keeps its pool for this many tasks instead (the fixup then closes it;
# a connection broken meanwhile fails its task, whose events the relay sends again).
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 1000)
