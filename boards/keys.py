"""The one module that knows Redis key formats and owns the connection and the Lua loader.

Keys (prefix `lb` by default, REDIS_KEY_PREFIX):
    lb:b:{game}:{season}:{board}:{region}:{period}   a board (sorted set, encoded scores)
    <board key>:d                                    distinct points on it (dense tie rule)
    lb:names:{game}                                  display names (hash player -> name)
    lb:pause:{game}                                  set while rebuild_boards swaps keys in
    lb:hidden:{game}                                 hidden and deleted players (a set)
    lb:dd:{event_id // 128}                          dedup markers, field event_id % 128
    lb:rl:p:{game}:{player}   lb:rl:k:{key_id}        token buckets (players' results, keys' requests)
    lb:dirty                  lb:pushed:{board key}   the live publisher's work list and last pushes
Boards: `all` and `best` have period `-`; `daily` has `2026-10-13`, `weekly` `2026-W42`,
`monthly` `2026-10`.
"""

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from redis.backoff import ExponentialBackoff
from redis.commands.core import Script
from redis.retry import Retry

SEASON_BOARDS = ("all", "best")
POINT_BOARDS = ("all", "daily", "weekly", "monthly")
BOARD_NAMES = ("all", "daily", "weekly", "monthly", "best")
GLOBAL = "global"
NO_PERIOD = "-"
DEDUP_GROUP = 128

_client_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}


def client() -> redis.Redis:
    """A shared client (one pool per process and URL); fails fast, never hangs on a dead Redis."""
    url = settings.REDIS_URL
    found = _clients.get(url)
    if found is not None:
        return found
    with _client_lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(
                url,
                decode_responses=True,
                socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                socket_connect_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                health_check_interval=30,
                # One quick retry (a dropped connection), never seconds of backoff: a dead Redis
                # must be a prompt 503. A retried script is harmless: the dedup makes it so.
                retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
            )
        return _clients[url]


def _prefix() -> str:
    return str(settings.REDIS_KEY_PREFIX)


@dataclass(frozen=True)
class BoardRef:
    game: str
    season_id: int
    board: str
    region: str = GLOBAL
    period: str = NO_PERIOD

    @property
    def key(self) -> str:
        return f"{_prefix()}:b:{self.game}:{self.season_id}:{self.board}:{self.region}:{self.period}"

    @property
    def distinct_key(self) -> str:
        return distinct_key(self.key)

    @classmethod
    def from_key(cls, key: str) -> "BoardRef":
        game, season_id, board, region, period = key.split(":")[-5:]
        return cls(game, int(season_id), board, region, period)


def histogram_key(board_key: str) -> str:
    """A board's equi-depth score histogram (JSON), kept for a minute."""
    return f"{_prefix()}:hist:{board_key}"


def histogram_dirty_key() -> str:
    """Boards changed since the histogram task last ran (a set of board keys)."""
    return f"{_prefix()}:hist-dirty"


def dirty_key() -> str:
    """Boards changed since the live publisher last looked (a set of board keys)."""
    return f"{_prefix()}:dirty"


def pushed_key(board_key: str) -> str:
    """Set for a second after a board's top 10 was pushed (the throttle)."""
    return f"{_prefix()}:pushed:{board_key}"


def pushed_digest_key(board_key: str) -> str:
    """The digest of the last top 10 pushed for a board (pushes only on change)."""
    return f"{_prefix()}:pushed-digest:{board_key}"


def names_store(game: str, names: Mapping[str, str]) -> None:
    """Display names into the game's names hash (read by the board scripts)."""
    if names:
        client().hset(names_key(game), mapping=dict[Any, Any](names))


def distinct_key(board_key: str) -> str:
    return f"{board_key}:d"


def board_pattern(game: str) -> str:
    return f"{_prefix()}:b:{game}:*"


def season_pattern(game: str, season_id: int) -> str:
    return f"{_prefix()}:b:{game}:{season_id}:*"


def names_key(game: str) -> str:
    return f"{_prefix()}:names:{game}"


def hidden_key(game: str) -> str:
    """The game's hidden (privacy) and deleted players: the board writer skips them."""
    return f"{_prefix()}:hidden:{game}"


def metrics_key() -> str:
    """Counters (a hash): `refused:{code}:{game}` and the like, read by /metrics."""
    return f"{_prefix()}:metrics"


def count(field: str, amount: int = 1) -> None:
    """Bump a counter; a metric never fails the request that counts it."""
    try:
        client().hincrby(metrics_key(), field, amount)
    except redis.RedisError:
        pass


def generation_key(game: str) -> str:
    """Bumped by every correction (revoke, hide, delete): cached top-N answers older than it go."""
    return f"{_prefix()}:gen:{game}"


def pause_key(game: str) -> str:
    return f"{_prefix()}:pause:{game}"


def player_bucket_key(game: str, player_id: str) -> str:
    return f"{_prefix()}:rl:p:{game}:{player_id}"


def reader_bucket_key(address: str) -> str:
    return f"{_prefix()}:rl:ip:{address}"


def player_hourly_bucket_key(game: str, player_id: str) -> str:
    return f"{_prefix()}:rl:h:{game}:{player_id}"


def server_key_bucket_key(key_id: str) -> str:
    return f"{_prefix()}:rl:k:{key_id}"


def dedup_location(event_id: int) -> tuple[str, str]:
    """Markers are grouped 128 to a small hash (listpack-encoded: a few bytes each)."""
    return f"{_prefix()}:dd:{event_id // DEDUP_GROUP}", str(event_id % DEDUP_GROUP)


def board_ttl_s(board: str) -> int:
    if board == "daily":
        return int(settings.BOARD_DAY_TTL_S)
    if board == "weekly":
        return int(settings.BOARD_WEEK_TTL_S)
    if board == "monthly":
        return int(settings.BOARD_MONTH_TTL_S)
    return 0


@cache
def lua_script(path: str) -> Script:
    """A redis-py Script (EVALSHA, reloaded on NOSCRIPT after a Redis restart)."""
    parts = [Path(p).read_text() for p in path.split("+")]
    return client().register_script("\n".join(parts))


def lua_path(module_file: str, *names: str) -> str:
    base = Path(module_file).resolve().parent / "lua"
    return "+".join(str(base / name) for name in names)
