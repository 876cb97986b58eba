"""The floor of a hot read: a bare ASGI application that answers a player's rank with one EVALSHA
and orjson, served by the same server and process count as the service (leaderboard_site/serve.py
`--app bench.floor:application`). bench/reads.py's phase F measures it beside the service's reads:
what a Python ASGI server on this machine can do for this read at all.

    FLOOR_GAME=g FLOOR_SEASON=1 FLOOR_TIME_BITS=33 FLOOR_TIE_RULE=competition \\
        python -m leaderboard_site.serve --port 8799 --app bench.floor:application

It serves GET /api/v1/games/{FLOOR_GAME}/boards/all/players/{player}: player.lua (with
ranking_lib.lua) on the game's `all` board, the keys computed once at start (boards/keys.py), its
reply as {"player_id", "score", "rank", "total"} (404 for a player not on the board); and
.../players/{player}/around (r=5): around.lua, its reply as {"entries": [{"rank", "player_id",
"display_name", "score"}, ...]}, the floor of an around read. No Django request handling, no
catalog, no throttle, no metrics: only what these reads cannot do without.
"""

import hashlib
import os

import django
import orjson
import redis.asyncio
import redis.exceptions
from django.conf import settings
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")
django.setup()  # the settings only: the Redis URL and the deployment's key prefix

from boards import keys  # noqa: E402
from boards.selectors import AROUND_SCRIPT, DISTRIBUTION_BUCKETS, EXACT_RANKS, PLAYER_SCRIPT  # noqa: E402
from common.redis import lua_source  # noqa: E402

GAME = os.environ["FLOOR_GAME"]
BOARD = keys.BoardRef(GAME, int(os.environ["FLOOR_SEASON"]), "all")
KEYS = [BOARD.key, BOARD.distinct_key, keys.names_key(GAME)]
TAIL = [2 ** int(os.environ["FLOOR_TIME_BITS"]), os.environ.get("FLOOR_TIE_RULE", "competition")]
TAIL += [EXACT_RANKS, DISTRIBUTION_BUCKETS]
PREFIX = f"/api/v1/games/{GAME}/boards/all/players/"
SOURCE = lua_source(PLAYER_SCRIPT)
HEADERS = [(b"content-type", b"application/json")]

SHA = hashlib.sha1(SOURCE.encode()).hexdigest()
AROUND_SOURCE = lua_source(AROUND_SCRIPT)
AROUND_SHA = hashlib.sha1(AROUND_SOURCE.encode()).hexdigest()
AROUND_TAIL = [5, *TAIL[:2]]  # r, span, tie rule
AROUND_SUFFIX = "/around"
_client: redis.asyncio.Redis | None = None


def _redis() -> redis.asyncio.Redis:
    global _client
    if _client is None:
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            str(settings.REDIS_URL),
            max_connections=settings.REDIS_FAST_PATH_CONNECTIONS,
            timeout=settings.REDIS_SOCKET_TIMEOUT_S,
            decode_responses=True,
            retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
        )
        _client = redis.asyncio.Redis(connection_pool=pool)
    return _client


async def _call(sha: str, source: str, args: list) -> list:  # type: ignore[type-arg]
    client = _redis()
    try:
        return await client.evalsha(sha, len(KEYS), *KEYS, *args)  # type: ignore[no-any-return]
    except redis.exceptions.NoScriptError:
        await client.script_load(source)
        return await client.evalsha(sha, len(KEYS), *KEYS, *args)  # type: ignore[no-any-return]


async def _answer(path: str) -> tuple[int, bytes]:
    rest = path[len(PREFIX) :]
    if rest.endswith(AROUND_SUFFIX):
        reply = await _call(AROUND_SHA, AROUND_SOURCE, [rest[: -len(AROUND_SUFFIX)], *AROUND_TAIL])
        if not reply:
            return 404, b'{"detail":"not found"}'
        flat = reply[1:]
        entries = [
            {"rank": int(r), "player_id": p, "display_name": name or None, "score": int(points)}
            for p, points, r, name in zip(flat[::4], flat[1::4], flat[2::4], flat[3::4], strict=True)
        ]
        return 200, orjson.dumps({"entries": entries})
    reply = await _call(SHA, SOURCE, [rest, *TAIL])
    if not reply:
        return 404, b'{"detail":"not found"}'
    return 200, orjson.dumps({"player_id": rest, "score": int(reply[0]), "rank": int(reply[1]), "total": int(reply[2])})


async def application(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
    if scope["type"] != "http":
        return
    path = scope["path"]
    status, body = 404, b'{"detail":"not found"}'
    if scope["method"] == "GET" and path.startswith(PREFIX):
        status, body = await _answer(path)
    headers = [*HEADERS, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
