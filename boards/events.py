"""Live pushes: each changed board's top 10 to its WebSocket groups; each connection sends at most
one a second.

The board writer adds every board it changed to a Redis set; `boards.publish_live` (beat, four
times a second, one process for all web processes) takes that set, reads each board's top 10 and,
when it differs from what was sent last, sends it to the board's groups: the board's own (the
connections that named a period) and, when the board is the game's current one (current season,
current period), the group of the connections that follow the current board of that kind and
region. So every tick carries the newest top 10 of a busy board to the web processes, one group
message per group and process, never one per score event or per connection.

Boards of the apps above this one (a tournament period's board, competitions/live.py) go into the
same set; the app registers a `PushSource` that knows their keys and makes their pushes, and a
source that fails costs its own boards' pushes that tick, not the season boards'.

The "at most once a second" a client sees is kept by each connection (boards/consumers.py): it
sends the newest message it holds once a second has passed since its last one (the top 10 on
connect counts), and drops the ones in between. The publisher's own claim (`CLAIM_MS`) only keeps
two publishers, or ticks that ran late and back to back, from sending a board twice in one tick.
channels-redis drops messages to a full channel (capacity 100 per web process): a tick sends at
most one message per changed board and group; clients resync from REST.
"""

import asyncio
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Any

from channels.layers import get_channel_layer
from django.utils import timezone

from common.redis import client
from seasons.catalog import catalog_get
from seasons.selectors import season_current

from . import keys
from .keys import BoardRef
from .kinds import KINDS, NO_PERIOD, BoardKind
from .selectors import BoardView, board_top

logger = logging.getLogger(__name__)

LIVE_TOP_N = 10
MIN_INTERVAL_S = 1.0  # a connection's pushes: at most one a second (boards/consumers.py)
CLAIM_MS = 200  # a board is sent at most once in this long (ticks every 250 ms)
DIRTY_PER_TICK = 1000  # changed boards one tick takes on (the rest wait for the next tick)
SEND_TIMEOUT_S = 10.0


def live_now() -> datetime:
    """The clock of the live pushes: which period and season are current (tests move it)."""
    return timezone.now()


def group_name(board_key: str) -> str:
    """The group of a board's connections that named it (ASCII, < 100 characters)."""
    return "top." + hashlib.sha1(board_key.encode()).hexdigest()[:24]


def follow_group(game: str, board: str, region: str) -> str:
    """The group of the connections following the current season and period of a board kind."""
    return "follow." + hashlib.sha1(f"{game}:{board}:{region}".encode()).hexdigest()[:24]


def top_message(view: BoardView, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "top", "board": view.board, "period": view.period, "entries": entries}


def top_text(message: dict[str, Any]) -> str:
    """The text a connection sends: the publisher and the consumer's snapshot write the same top 10
    the same way, so a connection can tell a message it already sent."""
    return json.dumps(message, separators=(",", ":"))


def period_start(kind: BoardKind, label: str) -> datetime:
    """The first moment (UTC) of a period of a periodic kind."""
    assert kind.period is not None
    return datetime.combine(kind.period.start(label), time(0), tzinfo=UTC)


def next_period_start(kind: BoardKind, label: str) -> datetime:
    """When the period after `label` begins: a following connection's next look at the board."""
    assert kind.period is not None
    return period_start(kind, kind.period.shift(label, 1))


@dataclass(frozen=True)
class Push:
    """One board's top 10 to send: its text, the groups it goes to, and the period it shows (a
    following connection takes no board of a period before the one it shows)."""

    key: str
    text: str
    groups: tuple[str, ...]
    period: str | int | None

    def sends(self) -> list[tuple[str, dict[str, Any]]]:
        event = {"type": "board.top", "text": self.text, "period": self.period}
        return [(group, event) for group in self.groups]


@dataclass(frozen=True)
class PushSource:
    """Boards of an app above this one (competitions: tournament period boards) that the board
    writer marks as changed like the season boards: `owns(key)` says which keys of the changed
    set are its own, `pushes(keys, now)` gives their pushes. Set from the app's AppConfig.ready
    (this app cannot import the apps above it)."""

    owns: Callable[[str], bool]
    pushes: Callable[[list[str], datetime], list[Push]]


_sources: list[PushSource] = []


def push_source_add(source: PushSource) -> None:
    if source not in _sources:
        _sources.append(source)


def publish_live(*, now: datetime | None = None) -> int:
    """Push the top 10 of boards that changed; returns how many boards were pushed.

    One tick's Redis claims, catalogs, digests and channel-layer sends go out together (pipelines,
    one catalog read per game, one event loop) rather than a round trip of each per board: a busy
    game changes 25 boards a second (5 kinds, global and 4 regions), and the worker that runs this
    also applies the results. A tick takes at most `DIRTY_PER_TICK` boards."""
    redis = client()
    dirty = [str(k) for k in redis.spop(keys.dirty_key(), DIRTY_PER_TICK) or []]
    if not dirty:
        return 0
    pushes = _pushes_of(_claimed(dirty), now or live_now())
    changed = _changed(pushes)
    layer = get_channel_layer()
    if changed and layer is not None:
        sending = asyncio.run_coroutine_threadsafe(
            _send_all(layer, [send for push in changed for send in push.sends()]), _send_loop()
        )
        sending.result(timeout=SEND_TIMEOUT_S)
    return len(changed)


def _claimed(dirty: list[str]) -> list[str]:
    """The boards this tick pushes. A claim is one atomic SET NX: of two publishers that pop the
    same board a moment apart, one pushes. A board claimed less than CLAIM_MS ago goes back into
    the set for a later tick."""
    redis = client()
    pipe = redis.pipeline(transaction=False)
    for key in dirty:
        pipe.set(keys.pushed_key(key), "1", px=CLAIM_MS, nx=True)
    claimed = [key for key, won in zip(dirty, pipe.execute(), strict=True) if won]
    won = set(claimed)
    postponed = [key for key in dirty if key not in won]
    if postponed:
        redis.sadd(keys.dirty_key(), *postponed)
    return claimed


def _pushes_of(claimed: list[str], now: datetime) -> list[Push]:
    """The pushes of the claimed boards: the season boards' here, the others' by their source. A
    source that fails loses its own boards' pushes for this tick, not the season boards'."""
    theirs: dict[int, list[str]] = {}
    ours: list[str] = []
    for key in claimed:
        owner = next((i for i, source in enumerate(_sources) if source.owns(key)), None)
        if owner is not None:
            theirs.setdefault(owner, []).append(key)
        elif keys.is_season_board_key(key):
            ours.append(key)
        else:
            logger.warning("live: no publisher knows the changed board %s", key)
    pushes = _pushes(ours, now)
    for owner, owned in theirs.items():
        try:
            pushes += _sources[owner].pushes(owned, now)
        except Exception:
            logger.exception("live: the pushes of %d boards failed", len(owned))
    return pushes


def _pushes(claimed: Iterable[str], now: datetime) -> list[Push]:
    """Each claimed live board's top 10, and whether it is its game's current board of its kind
    (the season current now, and for periodic kinds the period holding now)."""
    catalogs: dict[str, Any] = {}
    pushes = []
    for key in claimed:
        ref = BoardRef.from_key(key)
        if ref.game not in catalogs:
            catalogs[ref.game] = catalog_get(slug=ref.game)
        catalog = catalogs[ref.game]
        season = next((s for s in catalog.seasons if s.id == ref.season_id), None)
        if catalog.game is None or season is None or season.frozen_at is not None:
            continue
        period = None if ref.period == NO_PERIOD else ref.period
        view = BoardView(game=catalog.game, season=season, board=ref.board, region=ref.region, period=period)
        current_season = season_current(
            game=catalog.game, now=now, seasons=catalog.seasons, pointer_id=catalog.pointer_id
        )
        current = (current_season is not None and current_season.id == season.id) and (
            period is None or period == KINDS[ref.board].period_of(now)
        )
        text = top_text(top_message(view, board_top(view=view, n=LIVE_TOP_N, cached=False)))
        groups = [group_name(key)]
        if current:
            groups.append(follow_group(view.game.slug, view.board, view.region))
        pushes.append(Push(key=key, text=text, groups=tuple(groups), period=period))
    return pushes


def _changed(pushes: list[Push]) -> list[Push]:
    """The pushes whose top 10 differs from the one last sent for their board (else something
    below the top 10 changed); their digests are recorded as sent."""
    if not pushes:
        return []
    redis = client()
    digests = [hashlib.sha1(push.text.encode()).hexdigest() for push in pushes]
    pipe = redis.pipeline(transaction=False)
    for push in pushes:
        pipe.get(keys.pushed_digest_key(push.key))
    sent = pipe.execute()
    changed = [(push, digest) for push, digest, last in zip(pushes, digests, sent, strict=True) if last != digest]
    if changed:
        pipe = redis.pipeline(transaction=False)
        for push, digest in changed:
            pipe.set(keys.pushed_digest_key(push.key), digest, ex=86400)
        pipe.execute()
    return [push for push, _ in changed]


_loop_lock = threading.Lock()
_loop: tuple[int, asyncio.AbstractEventLoop] | None = None  # (the process it runs in, the loop)


def _send_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for the channel layer's sends, in a thread of its own, made at the
    first send (after a worker's fork). channels-redis keeps its connections per event loop: a new
    loop per tick (async_to_sync) connected to Redis anew every time, 20 ms of a tick's 26."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="live-sends", daemon=True).start()
            _loop = (os.getpid(), loop)
        return _loop[1]


async def _send_all(layer: Any, sends: list[tuple[str, dict[str, Any]]]) -> None:
    await asyncio.gather(*(layer.group_send(group, event) for group, event in sends))
