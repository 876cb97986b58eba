"""Live pushes: each changed board's top 10 to its WebSocket group, at most once a second.

The board writer adds every board it changed to a Redis set; `boards.publish_live` (beat, four
times a second, one process for all web processes) takes that set, reads each board's top 10 and
sends it to the board's group only when it differs from what was sent last. A board pushed less
than a second ago stays in the set for a later tick, so a busy board is pushed every 1 to 1.25 s.
One message per board per second, never one per score event: channels-redis drops messages to a
full channel, and clients resync from REST.
"""

import hashlib
import json
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from common.redis import client
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


def view_of(board_key: str) -> BoardView | None:
    ref = BoardRef.from_key(board_key)
    season = seasons_by_id(season_ids={ref.season_id}).get(ref.season_id)
    if season is None:
        return None
    period = None if ref.period == NO_PERIOD else ref.period
    return BoardView(game=season.game, season=season, board=ref.board, region=ref.region, period=period)


def publish_live() -> int:
    """Push the top 10 of boards that changed; returns how many messages were sent."""
    redis = client()
    dirty = [str(k) for k in redis.spop(keys.dirty_key(), 1000) or []]
    layer = get_channel_layer()
    sent = 0
    postponed = []
    for key in dirty:
        # The claim is one atomic SET NX: of two publishers that pop the same board a moment
        # apart, one pushes; and nobody pushes a board twice within a second.
        if not redis.set(keys.pushed_key(key), "1", px=1000, nx=True):
            postponed.append(key)  # pushed less than a second ago
            continue
        view = view_of(key)
        if view is None or view.frozen:
            continue
        entries = board_top(view=view, n=LIVE_TOP_N, cached=False)
        message = top_message(view, entries)
        digest = hashlib.sha1(json.dumps(message, sort_keys=True).encode()).hexdigest()
        if redis.get(keys.pushed_digest_key(key)) == digest:
            continue  # something below the top 10 changed
        redis.set(keys.pushed_digest_key(key), digest, ex=86400)
        if layer is not None:
            async_to_sync(layer.group_send)(group_name(key), {"type": "board.top", "message": message})
        sent += 1
    if postponed:
        redis.sadd(keys.dirty_key(), *postponed)
    return sent
