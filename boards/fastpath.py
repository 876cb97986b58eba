"""The fast entrance of the hot reads: an ASGI handler in front of Django that answers every
board read declared with a one-script form (apis.py: top, player, around, friends, distribution,
several players, the rank of a score) on live boards, and a player's boards (apis.py `BoardsRead`).

A hot read is one Redis round trip on `redis.asyncio` (a pipeline: the caller's read-throttle
token, the game's catalog version, the read's Lua script) and JSON rendered with orjson, with no
thread hop, no middleware and no DRF in between. It is built from the same declaration as the
Django view (common/operations.py): the route, the query's bounds, the script's call and parse,
the answer's serializer and the errors are the declaration's, so the two answer the same bytes
(boards/tests/test_fastpath.py compares them request by request, and checks that this entrance,
not Django behind it, answered).

It answers 200s, and the errors it can decide by itself: a bad query (400), an unknown board or
season (404, once the catalog it resolved them with is known to be current), a player who is not
ranked (404), an address over the read throttle (429), Redis down (503, at once: a refused
connection is retried once, 10 ms later; one never answered is given REDIS_CONNECT_TIMEOUT_S,
twice). Everything else falls through to Django unchanged: another method or path, a game whose
catalog is not in Redis (a new game, a flush), a frozen season (PostgreSQL), a read of a board
split by player (board_shards > 1: boards/sharded.py; only a cached answer held at every shard's
current version is served here). With the boards on a Redis Cluster (REDIS_CLUSTER_URL) every
read falls through: its boards are read by scatter-gather in Django on redis-py's cluster client.
"""

import asyncio
import functools
import logging
import re
import time
import weakref
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson
import redis
import redis.asyncio
from django.conf import settings
from django.core.signals import setting_changed
from django.utils import timezone
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from common.api_errors import BOARDS_DOWN, RETRY_AFTER_S, ApiError
from common.asgi import (
    ROUTE_NAME,
    ASGIApp,
    Fallback,
    Receive,
    Scope,
    Send,
    plain_request,
    query_values,
    render,
    respond,
    respond_error,
)
from common.operations import FAST_ANSWERS, Args, Operation, Router
from common.redis import (
    AsyncTimedConnection,
    AsyncTimedSentinelConnection,
    BlockingSentinelPool,
    is_sentinel_url,
    lua_path,
    lua_source,
    on_cluster,
    sentinels_of,
)
from seasons.catalog import Catalog, catalog_cached, catalog_local, catalog_parse, catalog_remember
from seasons.keys import catalog_key, catalog_version_key, games_version_key

from . import apis, keys, lookups, pages, selectors
from .apis import BoardRead, BoardsRead, CatalogRead
from .keys import GLOBAL
from .params import current_boards, not_ranked, not_ranked_anywhere, view_error
from .selectors import BoardView, Cached
from .sharded import ShardedBoard
from .throttle import THROTTLE_SPENT, reader_throttle, throttled_error

RETRY_AFTER = {"Retry-After": str(RETRY_AFTER_S)}
_NO_QUERY: dict[str, str] = {}
logger = logging.getLogger(__name__)

# The reads this entrance answers (apis.py): every board read with a one-script form, and the
# reads of a game's catalog.
ROUTER = Router(
    apis.OPERATIONS,
    serves=lambda op: (
        isinstance(op.fast, CatalogRead | BoardsRead) or (isinstance(op.fast, BoardRead) and op.fast.script is not None)
    ),
)
TOGETHER = lua_path(__file__, "together.lua")
GET_SCRIPT = lua_path(__file__, "get.lua")
ONE_READ = lua_path(__file__, "one_read.lua")
Call = tuple[str, list[str], list[Any]]  # a read script's path (libraries joined), its KEYS and ARGV


@functools.cache
def together_source(paths: tuple[str, ...]) -> str:
    """Read scripts as one (lua/together.lua says how): their libraries once, each script as a
    function of its own KEYS and ARGV, then the runner that calls them with their slices and puts
    the catalog's version in front (lua/one_read.lua for a single read: no counts to send)."""
    libraries: list[str] = []
    reads = []
    for i, path in enumerate(paths, 1):
        *libs, script = path.split("+")
        libraries += [lib for lib in libs if lib not in libraries]
        reads.append(f"reads[{i}] = function(KEYS, ARGV)\n{lua_source(script)}\nend")
    runner = lua_source(ONE_READ if len(paths) == 1 else TOGETHER)
    return "\n".join([*(lua_source(lib) for lib in libraries), "local reads = {}", *reads, runner])


def together_args(calls: list[Call]) -> tuple[list[str], list[Any]]:
    """KEYS and ARGV of a together.lua call of these reads (the catalog's version key still to
    add): each key sent once (the reads of one board share theirs), each read's keys named by
    their places in KEYS."""
    if len(calls) == 1:  # a hot read (lua/one_read.lua)
        [(_, call_keys, call_args)] = calls
        return [*call_keys], call_args
    places: dict[str, int] = {}
    specs = []
    for _, call_keys, call_args in calls:
        at = [places.setdefault(key, len(places) + 1) for key in call_keys]
        specs.append(f"{','.join(map(str, at))}/{len(call_args)}")
    return list(places), [" ".join(specs), *(arg for _, _, call_args in calls for arg in call_args)]


class FastReads:
    """ASGI: the hot reads here, everything else to `fallback` (Django and Channels' routing)."""

    def __init__(self, fallback: ASGIApp) -> None:
        self.fallback = fallback
        # A client per event loop (a server runs one; a test's calls may each run their own).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, redis.asyncio.Redis]]
        self._clients = weakref.WeakKeyDictionary()
        self._last: tuple[asyncio.AbstractEventLoop, redis.asyncio.Redis] | None = None
        self._shas: dict[tuple[str, ...], str] = {}  # together_source's SHA by reads, once loaded
        setting_changed.connect(self._settings_changed, weak=True)

    def _settings_changed(self, **kwargs: Any) -> None:
        self._last = None  # REDIS_URL may have changed (tests)

    def client(self) -> redis.asyncio.Redis:
        loop = asyncio.get_running_loop()
        if self._last is not None and self._last[0] is loop:
            return self._last[1]  # the loop of the last read (a server runs one), settings unchanged
        url = str(settings.REDIS_URL)
        per_loop = self._clients.setdefault(loop, {})
        found = per_loop.get(url)
        if found is None:
            # A burst of reads beyond the pool's connections waits for one (up to the socket
            # timeout) instead of failing: redis-py 8's default pool raises MaxConnectionsError at
            # its 100th connection, which answered bursts with 503s.
            options: dict[str, Any] = {
                "max_connections": settings.REDIS_FAST_PATH_CONNECTIONS,
                "timeout": settings.REDIS_SOCKET_TIMEOUT_S,
                "decode_responses": True,
                "socket_timeout": settings.REDIS_SOCKET_TIMEOUT_S,
                "socket_connect_timeout": settings.REDIS_CONNECT_TIMEOUT_S,
                "health_check_interval": 30,
                # One quick retry (a connection Redis dropped), not redis-py's default of 10 with
                # up to a second between them (reads took up to 4.9 s to fail with Redis down).
                "retry": Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
            }
            pool: redis.asyncio.ConnectionPool
            if is_sentinel_url(url):
                sentinels, primary = sentinels_of(url)
                manager = redis.asyncio.sentinel.Sentinel(  # type: ignore[no-untyped-call]
                    sentinels, sentinel_kwargs=dict(settings.REDIS_SENTINEL_KWARGS)
                )
                pool = BlockingSentinelPool(  # type: ignore[no-untyped-call]
                    str(settings.REDIS_SENTINEL_MASTER),
                    manager,
                    connection_class=AsyncTimedSentinelConnection,
                    **primary,
                    **options,
                )
            else:
                pool = redis.asyncio.BlockingConnectionPool.from_url(
                    url, connection_class=AsyncTimedConnection, **options
                )
            found = per_loop[url] = redis.asyncio.Redis(connection_pool=pool)
        self._last = (loop, found)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and scope["method"] == "GET" and plain_request(scope) and not on_cluster():
            found = ROUTER.match("GET", scope["path"])
            if found is None and (page := PAGE.match(scope["path"])) is not None:
                await self.page(page["game"], scope, receive, send)
                return
            if found is None and scope["path"] == "/":
                await self.home(scope, receive, send)
                return
        if found is None:
            await self.fallback(scope, receive, send)
            return
        op, path_args = found
        scope[ROUTE_NAME] = op.route
        try:
            if isinstance(op.fast, CatalogRead):
                body = await self.answer_catalog(op, path_args, scope)
            elif isinstance(op.fast, BoardsRead):
                body = await self.answer_boards(op, path_args, scope)
            else:
                body = await self.answer(op, path_args, scope)
        except Fallback:
            await self.fallback(scope, receive, send)
            return
        except ApiError as error:  # what Django would raise for it: the same answer
            await respond_error(send, scope, error, allow=ROUTER.allow(op))
        except redis.RedisError as error:  # down, restarting (LOADING), out of memory: the views' 503
            _unavailable_log(error)
            await respond_error(send, scope, BOARDS_DOWN(headers=RETRY_AFTER), allow=ROUTER.allow(op))
        else:
            await respond(send, scope, 200, body, allow=ROUTER.allow(op))
        FAST_ANSWERS[op.id] += 1

    def view_of(self, catalog: Catalog, args: Args, now: datetime) -> BoardView:
        """The board the read means, by this process's copy of the catalog (view_error's 400/404)."""
        assert catalog.game is not None
        try:
            view = selectors.board_resolve(
                game=catalog.game,
                seasons=catalog.seasons,
                pointer_id=catalog.pointer_id,
                board=args["board"],
                region=args["region"],
                season=args["season"],
                period=args["period"],
                now=now,
            )
        except (selectors.UnknownBoard, selectors.UnknownSeason, selectors.BadQuery) as exc:
            raise view_error(exc, game=args["game"], board=args["board"]) from exc
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

    async def answer(self, op: Operation, path_args: dict[str, str], scope: Scope) -> bytes:
        """The read's body, in one Redis call: the read's script with the catalog's version in
        front of its reply (lua/together.lua), or for a held answer of a split board one MGET of its
        versions and the catalog's. The board is resolved with this process's copy of the
        catalog; when the call says the catalog has changed since, the read is made again at the
        new version (its answer thrown away)."""
        read: BoardRead = op.fast
        query = scope.get("query_string", b"")
        args = op.arguments(path_args, query_values(query) if query else _NO_QUERY)
        now = timezone.now()
        self.throttle(scope, now)
        slug = args["game"]
        version_key = catalog_version_key(slug)
        catalog = catalog_local(slug=slug)
        for _attempt in range(2):  # a second time when the catalog changed under this process's copy
            if catalog is None:
                catalog = await self.catalog(slug, await self.catalog_version(version_key))
            try:
                view = self.view_of(catalog, args, now)
            except ApiError:
                current = await self.catalog_version(version_key)
                if current == catalog.version:
                    raise  # an unknown board or season, a bad period: decided by the current catalog
                catalog = await self.catalog(slug, current)
                continue
            version, reply, held = await self.read(read, view, args, version_key)
            if version == catalog.version:
                return self.body(op, read, view, args, reply, held)
            catalog = await self.catalog(slug, version)
        raise Fallback

    async def answer_boards(self, op: Operation, path_args: dict[str, str], scope: Scope) -> bytes:
        """A read of a player over every board of the current season and periods, in one Redis
        call (the read's script with the catalog's version in front), as `answer` reads one board:
        resolved with this process's copy of the catalog, read again when it has changed. A frozen
        season, or one split by player, is Django's."""
        read: BoardsRead = op.fast
        query = scope.get("query_string", b"")
        args = op.arguments(path_args, query_values(query) if query else _NO_QUERY)
        now = timezone.now()
        self.throttle(scope, now)
        slug = args["game"]
        version_key = catalog_version_key(slug)
        catalog = catalog_local(slug=slug)
        for _attempt in range(2):
            if catalog is None:
                catalog = await self.catalog(slug, await self.catalog_version(version_key))
            try:
                views = current_boards(catalog, args, now)
            except ApiError:
                current = await self.catalog_version(version_key)
                if current == catalog.version:
                    raise  # no current season, a bad region: decided by the current catalog
                catalog = await self.catalog(slug, current)
                continue
            if views[0].frozen or views[0].season.board_shards > 1:
                raise Fallback
            version, [reply] = await self.together([(read.script, *read.call(views, args))], version_key)
            if version == catalog.version:
                value = read.parse(views, args, reply)
                if value is None:
                    raise not_ranked_anywhere(args["player_id"])
                return render(op.render(value))
            catalog = await self.catalog(slug, version)
        raise Fallback

    async def catalog_version(self, key: str) -> str | None:
        found = await self.client().get(key)
        return str(found) if found is not None else None

    async def answer_catalog(self, op: Operation, path_args: dict[str, str], scope: Scope) -> bytes:
        """A read of a game's catalog: the catalog's version checked (with the current season's
        regions, when the read wants them, in the same call: lua/regions.lua in together.lua), then
        the declared answer from this process's copy."""
        read: CatalogRead = op.fast
        args = op.arguments(path_args, _NO_QUERY)
        now = timezone.now()
        self.throttle(scope, now)
        slug = args["game"]
        version_key = catalog_version_key(slug)
        catalog = catalog_local(slug=slug)
        for _attempt in range(2):
            if catalog is None:
                catalog = await self.catalog(slug, await self.catalog_version(version_key))
            current = selectors.catalog_current(catalog, now) if read.regions else None
            regions = [GLOBAL]
            if current is not None:
                regions_call: Call = (selectors.REGIONS_SCRIPT, [keys.regions_key(slug, current.id)], [])
                version, [members] = await self.together([regions_call], version_key)
                if version == catalog.version and not members:
                    raise Fallback  # the regions set is not built (or expired): Django builds it
                regions = selectors.regions_listed(members)
            else:
                version = await self.catalog_version(version_key)
            if version == catalog.version:
                return render(op.render(read.answer(catalog, now, regions)))
            catalog = await self.catalog(slug, version)
        raise Fallback

    async def page(self, slug: str, scope: Scope, receive: Receive, send: Send) -> None:
        """The board page (boards/pages.py), or Django's answer when this entrance cannot give it."""
        scope[ROUTE_NAME] = PAGE_ROUTE
        try:
            body = await self.answer_page(slug, scope)
        except Fallback:
            await self.fallback(scope, receive, send)
            return
        except redis.RedisError as error:
            _unavailable_log(error)
            await self.fallback(scope, receive, send)  # Django's own answer to a page without Redis
            return
        await respond(send, scope, 200, body, allow=None, content_type=b"text/html; charset=utf-8")
        FAST_ANSWERS[PAGE_ROUTE] += 1

    async def home(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The list of games as Django last rendered it in this process, while the list's version
        in Redis is the one it was kept at (pages.home_kept); else Django's answer."""
        scope[ROUTE_NAME] = HOME_ROUTE
        try:
            version = await self.client().get(games_version_key())
        except redis.RedisError:
            version = None
        body = pages.home_kept(str(version) if version is not None else None)
        if body is None:
            await self.fallback(scope, receive, send)
            return
        await respond(send, scope, 200, body, allow=None, content_type=b"text/html; charset=utf-8")
        FAST_ANSWERS[HOME_ROUTE] += 1

    async def answer_page(self, slug: str, scope: Scope) -> bytes:
        """The page's pieces in one round trip: the top 100 (at the version held, with the
        catalog's version in front), the season's regions, and with `?player=` the player's
        standing, neighbours and friends; then pages.py assembles it."""
        query = scope.get("query_string", b"")
        values = query_values(query) if query else _NO_QUERY
        wanted = {name: values.get(name) or None for name in ("board", "region", "period", "player")}
        now = timezone.now()
        version_key = catalog_version_key(slug)
        catalog = catalog_local(slug=slug)
        for _attempt in range(2):
            if catalog is None:
                catalog = await self.catalog(slug, await self.catalog_version(version_key))
            view = _page_view(catalog, wanted, now)
            version, page = await self.page_read(view, wanted["player"], version_key, catalog, now)
            if version == catalog.version:
                return pages.page_html(page)
            catalog = await self.catalog(slug, version)
        raise Fallback

    async def page_read(
        self, view: BoardView, player: str | None, version_key: str, catalog: Catalog, now: datetime
    ) -> tuple[Any, pages.PageData]:
        """(the catalog's version, the page's data), read in one call (lua/together.lua)."""
        if player and view.tiers is not None and view.tiers.by == "percent":
            raise Fallback  # the friends' tiers need the board's total: one more call, Django's
        held = selectors.top_cache.peek(selectors.top_key(view, pages.TOP_N))
        links = pages.game_links()
        calls: list[Call] = [
            (selectors.TOP_SCRIPT, *selectors.top_call(view, pages.TOP_N, held.version if held else "")),
            (selectors.REGIONS_SCRIPT, [keys.regions_key(view.game.slug, view.season.id)], []),
        ]
        if links is not None:
            calls.append((GET_SCRIPT, [links.key(view.game.slug)], []))
        if player:
            calls.append((selectors.PLAYER_SCRIPT, *selectors.player_call(view, player)))
            calls.append((selectors.AROUND_SCRIPT, *selectors.around_call(view, player, 5)))
            calls.append((selectors.FRIENDS_SCRIPT, *selectors.friends_call(view, player)))
            boards = lookups.current_boards(catalog=catalog, region=view.region, now=now)
            calls.append((lookups.PLAYER_BOARDS_SCRIPT, *lookups.player_boards_call(boards, player)))
        version, replies = await self.together(calls, version_key)
        top_version, entries = selectors.top_parse(view, replies[0])
        top = held if entries is None and held is not None else Cached(version=top_version, value=entries or [])
        if top is not held:
            selectors.top_cache.put(selectors.top_key(view, pages.TOP_N), top)
        if not replies[1]:
            raise Fallback  # the regions set is not built (or expired): Django builds it
        links_html = links.html(replies.pop(2), timezone.now()) if links is not None else ""
        if links_html is None:
            raise Fallback  # the links' document is not there: Django writes it
        page = pages.PageData(
            view=view,
            regions=selectors.regions_listed(replies[1]),
            entries=top.value,
            top=top,
            player=player,
            links=links_html,
        )
        if player:
            me = selectors.player_parse(view, player, replies[2])
            if me is not None:
                around = selectors.around_parse(view, replies[3])
                page = replace(page, me=me, around=around, friends=selectors.friends_parse(view, replies[4]))
            found = lookups.player_boards_parse(boards, player, replies[5])
            page = replace(page, boards=found.boards if found is not None else None)
        return version, page

    def throttle(self, scope: Scope, now: datetime) -> None:
        """Spend the address's read token (in process: throttle.py); Django, if it answers after
        all, spends no second one."""
        address = scope["client"][0] if scope.get("client") else ""
        retry_after = reader_throttle(address=address, now=now)
        if retry_after is not None:
            raise throttled_error(retry_after)
        scope[THROTTLE_SPENT] = True

    async def read(
        self, read: BoardRead, view: BoardView, args: Args, version_key: str
    ) -> tuple[str | None, Any, Cached | None]:
        """(the catalog's version, the read's reply, the cached answer whose version it sent)."""
        script = read.script
        assert script is not None
        if script.counts_total and view.tiers is not None and view.tiers.by == "percent":
            raise Fallback  # the board's total takes one more call: Django makes it
        held = None
        if script.cache is not None and script.cache_key is not None:
            held = script.cache.peek(script.cache_key(view, args))
        if view.season.board_shards > 1:
            # A board split by player: its reads are scatter-gathers of several steps, which Django
            # answers (boards/sharded.py). A cached answer this process holds is served here while
            # the versions it was read at are still current.
            if held is None or script.split_versions is None:
                raise Fallback
            versions: list[Any] = await self.client().mget([*script.split_versions(view), version_key])
            return versions[-1], versions[:-1], held
        call: Call = (script.script, *script.call(view, args, held.version if held else ""))
        version, [reply] = await self.together([call], version_key)
        return version, reply, held

    async def together(self, calls: list[Call], version_key: str) -> tuple[str | None, list[Any]]:
        """(the catalog's version, each read's reply): these read scripts in one EVALSHA
        (lua/together.lua), loaded first when this process has not, or Redis lost it."""
        paths = tuple(path for path, _, _ in calls)
        script_keys, args = together_args(calls)
        script_keys.append(version_key)
        client = self.client()
        for attempt in range(2):
            sha = self._shas.get(paths)
            if sha is None:
                sha = self._shas[paths] = str(await client.script_load(together_source(paths)))
            try:
                reply = await client.evalsha(sha, len(script_keys), *script_keys, *args)
            except redis.exceptions.NoScriptError:
                self._shas.clear()  # Redis restarted without its scripts
                if attempt:
                    raise
                continue
            version = reply[0]
            return (str(version) if version else None), list(reply[1:])
        raise Fallback

    def body(
        self, op: Operation, read: BoardRead, view: BoardView, args: Args, reply: Any, held: Cached | None
    ) -> bytes:
        script = read.script
        assert script is not None
        if view.season.board_shards > 1:  # the versions of a held answer (queue_read)
            if held is None or ShardedBoard.version_of(reply) != held.version:
                raise Fallback  # changed since: Django reads the shards again
            return self.cached_body(op, read, view, args, held)
        if script.cache is None:
            value = script.parse(view, args, reply)
            if value is None:
                raise not_ranked(args["player_id"])
            return render(op.render(read.present(view, args, value)))
        version, value = script.parse(view, args, reply)
        cached = held if value is None else Cached(version=version, value=value)
        if cached is None:
            raise Fallback
        return self.cached_body(op, read, view, args, cached)

    def cached_body(self, op: Operation, read: BoardRead, view: BoardView, args: Args, cached: Cached) -> bytes:
        """A cached answer's bytes, rendered once per version."""
        script = read.script
        assert script is not None and script.cache is not None and script.cache_key is not None
        if cached.body is None:
            cached.body = render(op.render(read.present(view, args, cached.value)))
            script.cache.put(script.cache_key(view, args), cached)
        return cached.body


PAGE = re.compile(r"^/games/(?P<game>[^/]+)/$")  # boards/page_urls.py's game-board
PAGE_ROUTE = "game-board"
HOME_ROUTE = "home"  # boards/page_urls.py's list of games


def _page_view(catalog: Catalog, wanted: dict[str, str | None], now: datetime) -> BoardView:
    """The board a page's address names, by this process's copy of the catalog (pages.page_view);
    Django answers what this cannot: no season, a frozen board, a board split by player."""
    assert catalog.game is not None
    game = catalog.game

    def resolve(board: str, region: str | None, period: str | None) -> BoardView:
        return selectors.board_resolve(
            game=game,
            seasons=catalog.seasons,
            pointer_id=catalog.pointer_id,
            board=board,
            region=region,
            season=None,
            period=period,
            now=now,
        )

    try:
        view = pages.page_view(wanted, resolve)
    except selectors.UnknownSeason as exc:
        raise Fallback from exc
    if view.frozen or view.season.board_shards > 1:
        raise Fallback
    return view


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
