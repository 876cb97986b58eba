"""Live pushes: each changed board's top 10 to its WebSocket group, at most once a second.

The board writer adds every board it changed to a Redis set; `boards.publish_live` (beat, four
times a second, one process for all web processes) takes that set, reads each board's top 10 and
sends it to the board's group only when it differs from what was sent last. A board pushed less
than a second ago stays in the set for a later tick, so a busy board is pushed every 1 to 1.25 s.
One message per board per second, never one per score event: channels-redis drops messages to a
full channel, and clients resync from REST.
"""

import asyncio
import hashlib
import json
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from common.redis import client
from seasons.models import Season
from seasons.selectors import seasons_by_id

from . import keys
from .keys import BoardRef
from .kinds import NO_PERIOD
from .selectors import BoardView, board_top

LIVE_TOP_N = 10


def group_name(board_key: str) -> str:
    """A Channels group name (ASCII, < 100 characters) for a board key."""
    return "top." + hashlib.sha1(board_key.encode()).hexdigest()[:24]


def top_message(view: BoardView, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "top", "board": view.board, "period": view.period, "entries": entries}


def view_of(board_key: str, seasons: dict[int, Season] | None = None) -> BoardView | None:
    """The board a key names; `seasons`: the seasons already looked up for a tick's keys."""
    ref = BoardRef.from_key(board_key)
    season = (seasons if seasons is not None else seasons_by_id(season_ids={ref.season_id})).get(ref.season_id)
    if season is None:
        return None
    period = None if ref.period == NO_PERIOD else ref.period
    return BoardView(game=season.game, season=season, board=ref.board, region=ref.region, period=period)


def publish_live() -> int:
    """Push the top 10 of boards that changed; returns how many messages were sent.

    One tick's Redis claims, seasons, digests and channel-layer sends go out together (pipelines,
    one query, one event loop) rather than a round trip of each per board: a busy game changes
    25 boards a second (5 kinds, global and 4 regions), and the worker that runs this also applies
    the results."""
    redis = client()
    dirty = [str(k) for k in redis.spop(keys.dirty_key(), 1000) or []]
    if not dirty:
        return 0
    # The claim is one atomic SET NX: of two publishers that pop the same board a moment apart,
    # one pushes; and nobody pushes a board twice within a second.
    pipe = redis.pipeline(transaction=False)
    for key in dirty:
        pipe.set(keys.pushed_key(key), "1", px=1000, nx=True)
    claimed = [key for key, won in zip(dirty, pipe.execute(), strict=True) if won]
    postponed = [key for key in dirty if key not in set(claimed)]  # pushed less than a second ago
    if postponed:
        redis.sadd(keys.dirty_key(), *postponed)
    seasons = seasons_by_id(season_ids={BoardRef.from_key(key).season_id for key in claimed})
    messages: list[tuple[str, dict[str, Any], str]] = []
    for key in claimed:
        view = view_of(key, seasons)
        if view is None or view.frozen:
            continue
        message = top_message(view, board_top(view=view, n=LIVE_TOP_N, cached=False))
        messages.append((key, message, hashlib.sha1(json.dumps(message, sort_keys=True).encode()).hexdigest()))
    if not messages:
        return 0
    pipe = redis.pipeline(transaction=False)
    for key, _, _ in messages:
        pipe.get(keys.pushed_digest_key(key))
    changed = [
        (key, message, digest)
        for (key, message, digest), sent in zip(messages, pipe.execute(), strict=True)
        if sent != digest
    ]  # else something below the top 10 changed
    if not changed:
        return 0
    pipe = redis.pipeline(transaction=False)
    for key, _, digest in changed:
        pipe.set(keys.pushed_digest_key(key), digest, ex=86400)
    pipe.execute()
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(_send_all)(layer, [(group_name(key), message) for key, message, _ in changed])
    return len(changed)


async def _send_all(layer: Any, sends: list[tuple[str, dict[str, Any]]]) -> None:
    await asyncio.gather(
        *(layer.group_send(group, {"type": "board.top", "message": message}) for group, message in sends)
    )
