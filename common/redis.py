"""The Redis connection and the Lua loader, shared by every app.

Every key the service writes starts with `REDIS_KEY_PREFIX` (`lb` by default). Each app spells its
own keys in one module, whose docstring lists them:
    boards/keys.py       boards, dense companions, display names, hidden players, dedup markers,
                         the pause flag, live-push bookkeeping, the read buckets
    anticheat/keys.py    rate buckets of server keys and players
    seasons/keys.py      the game catalogs and their versions
    common/keys.py       the refusal counters read by /metrics
Django's cache (django-redis, `{prefix}:cache:*`), the Channels layer (`{prefix}:asgi*`) and the
Celery queue (`{prefix}:celery:scoring`, with kombu's `unacked` and bindings beside it) are
configured in leaderboard_site/settings. The prefix belongs to one deployment (by default named
after its database), so deployments sharing a Redis never meet.

With Redis Sentinel (REDIS_SENTINEL, REDIS_SENTINEL_MASTER) REDIS_URL is the sentinels in kombu's
form (`sentinel://h1:p1/0;sentinel://h2:p2/0`): `client_for` then builds redis-py's Sentinel
client of the primary (each new connection asks the sentinels where the primary is; one that finds
a replica, as after a failover, reconnects), and boards/fastpath.py its asyncio twin.
"""

import asyncio
import threading
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import redis
import redis.asyncio
import redis.asyncio.sentinel
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from redis.backoff import ExponentialBackoff
from redis.cluster import LoadBalancingStrategy, RedisCluster
from redis.commands.core import Script
from redis.retry import Retry
from redis.sentinel import Sentinel

_client_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}
_cluster_clients: dict[str, RedisCluster] = {}


class AsyncTimedConnection(redis.asyncio.Connection):
    """redis-py's asyncio connection, its write bounded by `asyncio.timeout` instead of
    `asyncio.wait_for`: the same socket timeout, without the task that wait_for makes for every
    command on Python 3.11 (12 us of CPU each, plus a turn of the event loop; reads were already
    bounded this way). Used by the fast entrance's pool (boards/fastpath.py)."""

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        timeout = self.socket_timeout
        if not timeout:
            await super().send_packed_command(command, check_health)
            return
        self.socket_timeout = None  # for this write only, bounded here; restored before the reply is read
        try:
            async with asyncio.timeout(timeout):
                await super().send_packed_command(command, check_health)
        except TimeoutError:
            raise redis.exceptions.TimeoutError("Timeout writing to socket") from None
        finally:
            self.socket_timeout = timeout


class AsyncTimedSentinelConnection(redis.asyncio.sentinel.SentinelManagedConnection, AsyncTimedConnection):
    """`AsyncTimedConnection` to the primary the sentinels name (REDIS_SENTINEL): it asks them at
    each connect, and a connection that finds itself on a replica (READONLY: the primary it knew
    was demoted) drops and asks again."""


class BlockingSentinelPool(redis.asyncio.sentinel.SentinelConnectionPool, redis.asyncio.BlockingConnectionPool):
    """redis-py's asyncio Sentinel pool with the fast entrance's waiting for a free connection
    (`BlockingConnectionPool`'s `max_connections` and `timeout`) instead of failing beyond them."""


def quick_retry() -> Retry:
    """One quick retry (a dropped connection: Redis restarted), never seconds of backoff (redis-py's
    default: 10 retries, up to 1 s apart): a dead Redis must be a prompt 503."""
    return Retry(ExponentialBackoff(cap=0.05, base=0.01), 1)


def client() -> redis.Redis:
    """A shared client (one pool per process and URL); fails fast, never hangs on a dead Redis."""
    return client_for(str(settings.REDIS_URL))


def client_for(url: str) -> redis.Redis:
    """`client()` for another Redis, such as the Celery broker's (CELERY_BROKER_URL); a
    `sentinel://` URL gives the client of the primary that REDIS_SENTINEL_MASTER names."""
    found = _clients.get(url)
    if found is not None:
        return found
    with _client_lock:
        if url not in _clients:
            options: dict[str, Any] = {
                "decode_responses": True,
                "socket_timeout": settings.REDIS_SOCKET_TIMEOUT_S,
                "socket_connect_timeout": settings.REDIS_CONNECT_TIMEOUT_S,
                "health_check_interval": 30,
                # A retried script is harmless: the dedup makes it so.
                "retry": quick_retry(),
            }
            if is_sentinel_url(url):
                sentinels, primary = sentinels_of(url)
                manager = Sentinel(sentinels, sentinel_kwargs=dict(settings.REDIS_SENTINEL_KWARGS))  # type: ignore[no-untyped-call]
                _clients[url] = manager.master_for(str(settings.REDIS_SENTINEL_MASTER), **primary, **options)  # type: ignore[no-untyped-call]
            else:
                _clients[url] = redis.Redis.from_url(url, **options)
        return _clients[url]


def is_sentinel_url(url: str) -> bool:
    return url.startswith("sentinel://")


def sentinels_of(url: str) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The sentinels (host, port) of a `sentinel://[:PW@]h:p/DB;...` URL (settings/env.py
    `sentinel_url`), and the primary's connection options it names (`db`, `password`)."""
    sentinels: list[tuple[str, int]] = []
    primary: dict[str, Any] = {"db": 0}
    for part in url.split(";"):
        parsed = urlparse(part)
        sentinels.append((str(parsed.hostname), int(parsed.port or 26379)))
        path = parsed.path.lstrip("/")
        if path.isdigit():
            primary["db"] = int(path)
        if parsed.password:
            primary["password"] = unquote(parsed.password)
    return sentinels, primary


# Settings every read and write asks for, several times a request: read once per process (a
# settings lookup costs about 0.4 us), again after a test changes a setting.
_hot: dict[str, Any] = {}


@receiver(setting_changed)
def _settings_changed(**kwargs: Any) -> None:
    _hot.clear()


def on_cluster() -> bool:
    """Whether the boards live on a Redis Cluster (REDIS_CLUSTER_URL set)."""
    found = _hot.get("cluster")
    if found is None:
        found = _hot["cluster"] = bool(settings.REDIS_CLUSTER_URL)
    return bool(found)


def boards_client() -> "redis.Redis | RedisCluster":
    """The client of the boards' Redis: the cluster's (redis-py's RedisCluster, which routes each
    key to its slot's node) when REDIS_CLUSTER_URL is set, else `client()`. Everything boards/keys.py
    lists as living on the cluster goes through this one; on a cluster a script's keys share one
    slot tag, and pipelines hold no scripts (redis-py refuses them there)."""
    url = str(settings.REDIS_CLUSTER_URL)
    if not url:
        return client()
    return _cluster_client(url, replicas=False)


def boards_read_client() -> "redis.Redis | RedisCluster":
    """The client the board reads use: on a cluster with REDIS_CLUSTER_REPLICA_READS, one whose
    connections to replicas are READONLY and whose read commands go round robin to each slot's
    replicas (boards/sharded.py sends its read scripts there as EVALSHA_RO); else `boards_client()`."""
    url = str(settings.REDIS_CLUSTER_URL)
    if not url or not settings.REDIS_CLUSTER_REPLICA_READS:
        return boards_client()
    return _cluster_client(url, replicas=True)


def _cluster_client(url: str, *, replicas: bool) -> RedisCluster:
    name = f"{url} {replicas}"
    found = _cluster_clients.get(name)
    if found is not None:
        return found
    with _client_lock:
        if name not in _cluster_clients:
            _cluster_clients[name] = RedisCluster.from_url(
                url,
                decode_responses=True,
                socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                socket_connect_timeout=settings.REDIS_CONNECT_TIMEOUT_S,
                # A failover takes the cluster a few seconds: redis-py refreshes its slot map on
                # MOVED and connection errors and retries; a read then answers 503, never hangs.
                retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
                load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if replicas else None,
            )
        return _cluster_clients[name]


def key_prefix() -> str:
    """The deployment's prefix, first part of every key."""
    found = _hot.get("prefix")
    if found is None:
        found = _hot["prefix"] = str(settings.REDIS_KEY_PREFIX)
    return str(found)


def deployment_keys_drop(*, keep: Iterable[str] = ()) -> int:
    """Unlink every key of this deployment (its prefix, the Celery queue's included) except `keep`;
    returns how many went. Another deployment's keys on the same Redis are not touched (never
    FLUSHDB). For bringing Redis in line with a restored ledger (scoring/recovery.py). With the
    boards on a Redis Cluster, its keys of this deployment go too (every master scanned)."""
    pattern = _glob_escape(key_prefix()) + ":*"
    kept = set(keep)
    dropped = 0
    for store in [client(), boards_client()] if on_cluster() else [client()]:
        batch: list[str] = []
        for key in store.scan_iter(match=pattern, count=5000):
            if key in kept:
                continue
            batch.append(key)
            if len(batch) >= 1000:
                dropped += int(store.unlink(*batch))
                batch = []
        if batch:
            dropped += int(store.unlink(*batch))
    return dropped


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def broker_key(name: str) -> str:
    """A key of the Celery broker (kombu's `global_keyprefix`): `broker_key("scoring")` is the
    apply queue's list, `broker_key("unacked")` the tasks delivered and not acknowledged."""
    return str(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix", "")) + name


@cache
def lua_source(path: str) -> str:
    """A script's text. `path` may join several files with `+` (a shared library first, then the
    script)."""
    return "\n".join(Path(p).read_text() for p in path.split("+"))


@cache
def lua_script(path: str) -> Script:
    """A redis-py Script (EVALSHA, reloaded on NOSCRIPT after a Redis restart)."""
    return client().register_script(lua_source(path))


def lua_path(module_file: str, *names: str) -> str:
    """The `lua/` files beside `module_file`, joined for `lua_script`."""
    base = Path(module_file).resolve().parent / "lua"
    return "+".join(str(base / name) for name in names)
