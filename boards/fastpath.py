"""The fast path of the hot reads: an ASGI handler in front of Django for GET top, player, around,
friends and distribution on live boards.

A hot read is one Redis round trip on `redis.asyncio` (a pipeline: the caller's read-throttle
token, the game's catalog version, the read's Lua script) and JSON rendered with orjson, with no
thread hop, no middleware and no DRF in between. It answers exactly what the Django view answers
(the same selectors' calls and parsers, the same body bytes, status and headers; a test compares
the two paths request by request). Whatever it does not answer itself falls through to Django
unchanged: another method or path, a bad query, an unknown game, board or season, a frozen
season (PostgreSQL), a read of a board split by player (board_shards > 1: boards/sharded.py;
only a top n held at every shard's current version is served here), a player who is not ranked,
a throttled client (Django spends no second token: the scope says this one was spent). Redis down
is the same 503 the views give, at once (a refused connection is retried once, 10 ms later; one
that is never answered is given REDIS_CONNECT_TIMEOUT_S, twice). With the boards on a Redis
Cluster (REDIS_CLUSTER_URL) every read falls through: its boards are read by scatter-gather in
Django (boards/sharded.py) on redis-py's cluster client.
"""

import asyncio
import logging
import re
import time
import weakref
from datetime import datetime
from typing import Any

import orjson
import redis
import redis.asyncio
from django.conf import settings
from django.http import QueryDict
from django.utils import timezone
from redis.asyncio.client import Pipeline
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from common.asgi import ROUTE_NAME, ASGIApp, Fallback, Receive, Scope, Send, plain_request, render, respond
from common.ratelimit import bucket_call
from common.redis import lua_source, on_cluster
from seasons.catalog import (
    Catalog,
    catalog_cached,
    catalog_key,
    catalog_local,
    catalog_parse,
    catalog_remember,
    catalog_version_key,
)

from . import selectors
from .keys import names_version_key, reader_bucket_key
from .selectors import BoardView, Cached
from .sharded import ShardedBoard
from .throttle import THROTTLE_SPENT

ROUTE = re.compile(
    r"^/api/v1/games/(?P<game>[^/]+)/boards/(?P<board>[^/]+)/"
    r"(?:(?P<top>top)|(?P<distribution>distribution)|players/(?P<player>[^/]+)(?:/(?P<sub>around|friends))?)$"
)


logger = logging.getLogger(__name__)


def route_name(match: re.Match[str]) -> str:
    """The name of the URL pattern (boards/urls.py) Django would answer this read with."""
    if match["top"]:
        return "board-top"
    if match["distribution"]:
        return "board-distribution"
    return f"board-{match['sub']}" if match["sub"] else "board-player"


_UNAVAILABLE = b'{"detail":"The board store (Redis) is unavailable.","code":"boards_unavailable"}'


def _int_param(query: QueryDict, name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise Fallback  # Django's 400
    return int(raw)


class _Scripts:
    """EVALSHA of the read scripts, loaded on first use and again after a Redis restart."""

    def __init__(self) -> None:
        self.sha: dict[str, str] = {}

    async def sha_of(self, client: redis.asyncio.Redis, path: str) -> str:
        sha = self.sha.get(path)
        if sha is None:
            sha = self.sha[path] = str(await client.script_load(lua_source(path)))
        return sha


class FastReads:
    """ASGI: the hot reads here, everything else to `fallback` (Django and Channels' routing)."""

    def __init__(self, fallback: ASGIApp) -> None:
        self.fallback = fallback
        # A client per event loop (a server runs one; a test's calls may each run their own).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, redis.asyncio.Redis]]
        self._clients = weakref.WeakKeyDictionary()
        self._scripts = _Scripts()

    def client(self) -> redis.asyncio.Redis:
        url = str(settings.REDIS_URL)
        per_loop = self._clients.setdefault(asyncio.get_running_loop(), {})
        found = per_loop.get(url)
        if found is None:
            # A burst of reads beyond the pool's connections waits for one (up to the socket
            # timeout) instead of failing: redis-py 8's default pool raises MaxConnectionsError at
            # its 100th connection, which answered bursts with 503s.
            pool = redis.asyncio.BlockingConnectionPool.from_url(
                url,
                max_connections=settings.REDIS_FAST_PATH_CONNECTIONS,
                timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                decode_responses=True,
                socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                socket_connect_timeout=settings.REDIS_CONNECT_TIMEOUT_S,
                health_check_interval=30,
                # One quick retry (a connection Redis dropped), not redis-py's default of 10 with
                # up to a second between them (reads took up to 4.9 s to fail with Redis down).
                retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
            )
            found = per_loop[url] = redis.asyncio.Redis(connection_pool=pool)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and plain_request(scope) and not on_cluster():
            match = ROUTE.match(scope["path"])
            if match is not None:
                scope[ROUTE_NAME] = route_name(match)
                try:
                    body = await self.answer(match, scope)
                except Fallback:
                    pass
                except redis.RedisError as error:  # down, restarting (LOADING), out of memory: the views' 503
                    _unavailable_log(error)
                    await self.respond(send, scope, 503, _UNAVAILABLE, retry_after=True)
                    return
                else:
                    await self.respond(send, scope, 200, body)
                    return
        await self.fallback(scope, receive, send)

    async def respond(self, send: Send, scope: Scope, status: int, body: bytes, *, retry_after: bool = False) -> None:
        extra = [(b"Retry-After", b"5")] if retry_after else []
        await respond(send, scope, status, body, allow=b"GET, HEAD, OPTIONS", extra=extra)

    def view_of(self, catalog: Catalog, match: re.Match[str], query: QueryDict, now: datetime) -> BoardView:
        assert catalog.game is not None
        try:
            view = selectors.board_resolve(
                game=catalog.game,
                seasons=catalog.seasons,
                pointer_id=catalog.pointer_id,
                board=match["board"],
                region=query.get("region"),
                season=query.get("season"),
                period=query.get("period"),
                now=now,
            )
        except (selectors.UnknownBoard, selectors.UnknownSeason, selectors.BadQuery) as exc:
            raise Fallback from exc
        if view.frozen:
            raise Fallback  # final standings live in PostgreSQL
        return view

    async def catalog(self, slug: str, version: str | None) -> Catalog:
        """The game's catalog at `version` (Redis's current one): this process's copy, or read."""
        found = catalog_cached(slug=slug, version=version)
        if found is not None:
            return found
        raw = await self.client().get(catalog_key(slug)) if version is not None else None
        if raw is None or version is None:
            raise Fallback  # no catalog in Redis (a new game, or flushed): Django builds it
        catalog = catalog_parse(version=version, document=orjson.loads(raw))
        catalog_remember(catalog)
        return catalog

    async def answer(self, match: re.Match[str], scope: Scope) -> bytes:
        slug = match["game"]
        query = QueryDict(scope.get("query_string", b""))
        kind = "top" if match["top"] else "distribution" if match["distribution"] else match["sub"] or "player"
        n = _int_param(query, "n", 100, 1, 1000) if kind == "top" else 0
        r = _int_param(query, "r", 5, 0, 50) if kind == "around" else 0
        now = timezone.now()
        client = self.client()
        catalog = catalog_local(slug=slug)  # whatever its version: checked in the same round trip
        throttle = _throttle_call(scope, now)
        for _attempt in range(2):  # a second time when the catalog changed under this process's copy
            view = self.view_of(catalog, match, query, now) if catalog is not None else None
            pipe = client.pipeline(transaction=False)
            if throttle is not None:
                await self.queue(pipe, *throttle)
            pipe.get(catalog_version_key(slug))
            held = None
            if view is not None:
                held = await self.queue_read(pipe, kind, view, match["player"], n, r)
            replies = await pipe.execute(raise_on_error=False)
            if any(isinstance(reply, redis.exceptions.NoScriptError) for reply in replies):
                self._scripts.sha.clear()  # Redis restarted without its scripts: load them, read again
                continue
            for reply in replies:
                if isinstance(reply, Exception):
                    raise reply
            if throttle is not None:
                granted = replies.pop(0)
                throttle = None
                if int(granted[0]) == 0:
                    raise Fallback  # over the address's bucket: Django answers the 429 (its bucket is empty too)
                scope[THROTTLE_SPENT] = True  # a fallback from here on spends no second token
            version = replies[0]
            if view is not None and catalog is not None and version == catalog.version:
                return self.body(kind, view, match["player"], n, replies[1], held)
            catalog = await self.catalog(slug, version)
        raise Fallback

    async def queue(self, pipe: Pipeline, path: str, script_keys: list[str], args: list[Any]) -> None:
        sha = await self._scripts.sha_of(self.client(), path)
        pipe.evalsha(sha, len(script_keys), *script_keys, *args)

    async def queue_read(
        self, pipe: Pipeline, kind: str, view: BoardView, player_id: str | None, n: int, r: int
    ) -> Cached | None:
        """Queue the read's script; returns the cached answer whose version it sends, if any."""
        if view.season.board_shards > 1:
            # A board split by player: its reads are scatter-gathers of several steps, which Django
            # answers (boards/sharded.py). A top n this process holds is served here while every
            # shard's version (and the names version) is still the one it was read at.
            held = selectors.top_cache.peek((view.ref.key, n)) if kind == "top" else None
            if held is None:
                raise Fallback
            pipe.mget(
                [part.version_key for part in view.ref.shards(view.season.board_shards)]
                + [names_version_key(view.game.slug)]
            )
            return held
        if kind == "top":
            held = selectors.top_cache.peek((view.ref.key, n))
            await self.queue(pipe, selectors.TOP_SCRIPT, *selectors.top_call(view, n, held.version if held else ""))
            return held
        if kind == "distribution":
            held = selectors.distribution_cache.peek(view.ref.key)
            call = selectors.distribution_call(view, held.version if held else "")
            await self.queue(pipe, selectors.DISTRIBUTION_SCRIPT, *call)
            return held
        assert player_id is not None
        if kind == "player":
            await self.queue(pipe, selectors.PLAYER_SCRIPT, *selectors.player_call(view, player_id))
        elif kind == "around":
            await self.queue(pipe, selectors.AROUND_SCRIPT, *selectors.around_call(view, player_id, r))
        else:
            await self.queue(pipe, selectors.FRIENDS_SCRIPT, *selectors.friends_call(view, player_id))
        return None

    def top_body(self, view: BoardView, n: int, cached: Cached) -> bytes:
        if cached.body is None:
            cached.body = render(
                {
                    "board": view.board,
                    "season": view.season.id,
                    "period": view.period,
                    "region": view.region,
                    "tie_rule": view.game.tie_rule,
                    "entries": cached.value,
                }
            )
            selectors.top_cache.put((view.ref.key, n), cached)
        return cached.body

    def body(self, kind: str, view: BoardView, player_id: str | None, n: int, reply: Any, held: Cached | None) -> bytes:
        if view.season.board_shards > 1:  # the versions of a held top n (queue_read)
            if held is None or ShardedBoard.version_of(reply) != held.version:
                raise Fallback  # changed since: Django reads the shards again
            return self.top_body(view, n, held)
        if kind == "top":
            version, entries = selectors.top_parse(view, reply)
            cached = held if entries is None and held is not None else Cached(version=version, value=entries or [])
            return self.top_body(view, n, cached)
        if kind == "distribution":
            version, value = selectors.distribution_parse(view, reply)
            cached = held if value is None and held is not None else Cached(version=version, value=value)
            if cached.body is None:
                cached.body = render(cached.value)
                selectors.distribution_cache.put(view.ref.key, cached)
            return cached.body
        assert player_id is not None
        if kind == "player":
            standing = selectors.player_parse(view, player_id, reply)
            if standing is None:
                raise Fallback  # Django's 404 not_ranked
            return render(
                {
                    "player_id": standing.player_id,
                    "display_name": standing.display_name,
                    "score": standing.score,
                    "rank": standing.rank,
                    "total": standing.total,
                    "percentile": standing.percentile,
                    "percentile_error": standing.percentile_error,
                }
            )
        if kind == "around":
            entries = selectors.around_parse(view, reply)
            if entries is None:
                raise Fallback  # Django's 404 not_ranked
            return render({"entries": entries})
        return render({"entries": selectors.friends_parse(view, reply)})


_last_unavailable_log = 0.0


def pool_exhausted(error: redis.RedisError) -> bool:
    """No pooled connection came free within the wait (redis-py's BlockingConnectionPool raises
    ConnectionError from the timeout): this process has more reads in flight than connections,
    which says it is overloaded, not that Redis is down."""
    return isinstance(error, redis.ConnectionError) and isinstance(error.__cause__, asyncio.TimeoutError)


def _unavailable_log(error: redis.RedisError) -> None:
    """The views log each Redis failure (common/api_errors.py); the fast path, which can answer
    thousands of 503s a second, one line a second at most, naming the error. The answer is the same
    503 either way; the line tells the on-call engineer an overloaded web process from a Redis that
    went away (seen in the reads bench over capacity: "redis unavailable: No connection available"
    while Redis answered every other client)."""
    global _last_unavailable_log
    now = time.monotonic()
    if now - _last_unavailable_log >= 1.0:
        _last_unavailable_log = now
        if pool_exhausted(error):
            logger.warning(
                "fast path overloaded: all %d Redis connections of this process stayed busy for %.1f s "
                "(REDIS_FAST_PATH_CONNECTIONS, REDIS_SOCKET_TIMEOUT_S); reads answered 503 meanwhile",
                settings.REDIS_FAST_PATH_CONNECTIONS,
                settings.REDIS_SOCKET_TIMEOUT_S,
            )
        else:
            logger.warning("redis unavailable (fast path): %s: %s", type(error).__name__, error)


def _throttle_call(scope: Scope, now: datetime) -> tuple[str, list[str], list[Any]] | None:
    """The read bucket's script call for the client's address (None when the throttle is off)."""
    rate = int(settings.READ_RATE_PER_S)
    client = scope.get("client")
    address = client[0] if client else ""
    if rate == 0 or not address:
        return None
    return bucket_call(
        keys=[reader_bucket_key(address)],
        wants=[1],
        capacity=max(int(settings.READ_RATE_BURST), 1),
        ms_per_token=1000 / rate,
        now=now,
    )
