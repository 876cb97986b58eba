"""The fast entrance of the tournament board reads (top, player, around): an ASGI handler in front
of Django, built on the board reads' (boards/fastpath.py `FastReads`: its Redis client, its
script loading, its read throttle), answering every operation declared with a `StandingRead`
(apis.py) in one Redis call: the read's script with the tournament's configuration version in
front of its reply. The tournament comes from this process's copy of its configuration in Redis
(standings.py `conf_publish`), read again when the call says it has changed.

It answers 200s and the errors it can decide by itself (400 for a bad query, 404 `unknown_period`
by a current configuration, 404 `not_entered` / `not_ranked`, 429, 503). Everything else goes to
Django unchanged: a tournament without its copy in Redis (new, or flushed: Django's read writes
it), a period whose grace is over (its status `final` or `grace` is the database's), counters
Redis has lost (Django fills them), and every read on a Redis Cluster.
"""

import threading
from abc import ABC, abstractmethod

import redis
from django.utils import timezone

from boards.fastpath import FastReads
from boards.selectors import Cached
from common.api_errors import BOARDS_DOWN, RETRY_AFTER_S, ApiError
from common.asgi import (
    ROUTE_NAME,
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
from common.redis import on_cluster

from . import apis, keys, standings
from .apis import StandingRead, standing_view
from .periods import FINAL
from .standings import CountersNotFilled, StandingView, TournamentConf, conf_parse

ROUTER = Router(apis.OPERATIONS, serves=lambda op: isinstance(op.fast, StandingRead))
RETRY_AFTER = {"Retry-After": str(RETRY_AFTER_S)}
_NO_QUERY: dict[str, str] = {}
_confs: dict[tuple[str, str], TournamentConf] = {}  # this process's copies, by (game, tournament)
_confs_lock = threading.Lock()


def confs_forget() -> None:
    """Forget this process's copies of tournaments (tests)."""
    with _confs_lock:
        _confs.clear()


class RoutedReads(FastReads, ABC):
    """ASGI: the GETs `router` matches answered by `answer` (on one Redis; a Fallback, and every
    other request, go to `fallback`): the tournament reads here, the league reads in
    league_fastpath.py."""

    router: Router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and scope["method"] == "GET" and plain_request(scope) and not on_cluster():
            found = self.router.match("GET", scope["path"])
        if found is None:
            await self.fallback(scope, receive, send)
            return
        op, path_args = found
        scope[ROUTE_NAME] = op.route
        try:
            body = await self.answer(op, path_args, scope)
        except Fallback:
            await self.fallback(scope, receive, send)
            return
        except ApiError as error:
            await respond_error(send, scope, error, allow=self.router.allow(op))
        except redis.RedisError:
            await respond_error(send, scope, BOARDS_DOWN(headers=RETRY_AFTER), allow=self.router.allow(op))
        else:
            await respond(send, scope, 200, body, allow=self.router.allow(op))
        FAST_ANSWERS[op.id] += 1

    @abstractmethod
    async def answer(self, op: Operation, path_args: dict[str, str], scope: Scope) -> bytes:
        """The body of a 200 for `op`; raises Fallback (Django answers), or ApiError."""


class FastStandings(RoutedReads):
    """ASGI: the tournament board reads here, everything else to `fallback`."""

    router = ROUTER

    async def conf(self, game: str, slug: str) -> TournamentConf:
        """The tournament's configuration as Redis has it now (Fallback: none there)."""
        raw = await self.client().get(keys.conf_key(game, slug))
        if raw is None:
            raise Fallback
        conf = conf_parse(raw)
        with _confs_lock:
            _confs[(game, slug)] = conf
        return conf

    async def answer(self, op: Operation, path_args: dict[str, str], scope: Scope) -> bytes:
        """The read's body: the period resolved by this process's copy of the configuration, the
        script called with the configuration's version key; a version other than the copy's means
        the tournament changed: read it again, and the period."""
        read: StandingRead = op.fast
        query = scope.get("query_string", b"")
        args = op.arguments(path_args, query_values(query) if query else _NO_QUERY)
        now = timezone.now()
        self.throttle(scope, now)
        game, slug = args["game"], args["tournament_id"]
        version_key = keys.conf_version_key(game, slug)
        conf = _confs.get((game, slug))
        for _attempt in range(2):
            if conf is None:
                conf = await self.conf(game, slug)
            try:
                view = standing_view(conf, args["period"], now, lambda period: period.status_at(now))
            except ApiError:
                if await self.catalog_version(version_key) == conf.version:
                    raise  # an unknown period, by the current configuration
                conf = None
                continue
            if view.status == FINAL:
                raise Fallback  # past its grace: whether it is final is the database's word
            if read is apis.TOP:
                body = await self.top_body(op, view, args, version_key)
                if body is None:
                    conf = None
                    continue
                return body
            version, [reply] = await self.together([(read.script, *read.call(view, args))], version_key)
            if version != conf.version:
                conf = None
                continue
            try:
                value = read.parse(view, args, reply)
            except CountersNotFilled:
                raise Fallback from None  # Django fills them
            if value is None and read.missing is not None:
                raise read.missing(args)
            return render(op.render(read.present(view, args, value)))
        raise Fallback

    async def top_body(self, op: Operation, view: StandingView, args: Args, version_key: str) -> bytes | None:
        """The top's body from this process's copy while top.lua says it is current (the board,
        the names and the attempts unchanged), else read and rendered anew; None when the
        tournament's configuration changed (read it again)."""
        key = (view.conf.game, view.conf.slug, view.conf.version, view.period.index, view.status, args["n"])
        held = standings.top_cache.peek(key)
        call = (apis.TOP.script, *standings.top_call(view, args["n"], held.version if held else ""))
        version, [reply] = await self.together([call], version_key)
        if version != view.conf.version:
            return None
        try:
            top_version, entries = standings.top_parse(view, reply)
        except CountersNotFilled:
            raise Fallback from None  # Django fills them
        cached = held if entries is None else Cached(version=top_version, value=entries)
        if cached is None:
            raise Fallback
        if cached.body is None:
            cached.body = render(op.render(apis.TOP.present(view, args, cached.value)))
            standings.top_cache.put(key, cached)
        return cached.body
