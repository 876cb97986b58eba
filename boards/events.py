"""Live pushes: each changed board's top 10 to its WebSocket group, at most once a second.

The board writer adds every board it changed to a Redis set; `boards.publish_live` (beat, every
second, one process for all web processes) takes that set, reads each board's top 10 and sends it
to the board's group only when it differs from what was sent last. A board pushed less than a
second ago stays in the set for the next tick. One message per board per second, never one per
score event: channels-redis drops messages to a full channel, and clients resync from REST.
"""

import hashlib
import json
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from scoring import redis_boards
from seasons.models import Game, Season

from .selectors import BoardView, board_top

LIVE_TOP_N = 10


def group_name(board_key: str) -> str:
    """A Channels group name (ASCII, < 100 characters) for a board key."""
    return "top." + hashlib.sha1(board_key.encode()).hexdigest()[:24]


def top_message(view: BoardView, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "top", "board": view.board, "period": view.period, "entries": entries}


def view_of(board_key: str) -> BoardView | None:
    ref = redis_boards.BoardRef.from_key(board_key)
    season = Season.objects.select_related("game").filter(pk=ref.season_id).first()
    if season is None:
        return None
    game: Game = season.game
    period = None if ref.period == redis_boards.NO_PERIOD else ref.period
    return BoardView(game=game, season=season, board=ref.board, region=ref.region, period=period)


def publish_live() -> int:
    """Push the top 10 of boards that changed; returns how many messages were sent."""
    client = redis_boards.client()
    dirty = [str(k) for k in client.spop(redis_boards.dirty_key(), 1000) or []]
    layer = get_channel_layer()
    sent = 0
    postponed = []
    for key in dirty:
        pushed = redis_boards.pushed_key(key)
        if client.pttl(pushed) > 0:
            postponed.append(key)  # pushed less than a second ago
            continue
        view = view_of(key)
        if view is None or view.frozen:
            continue
        entries = board_top(view=view, n=LIVE_TOP_N, cached=False)
        message = top_message(view, entries)
        digest = hashlib.sha1(json.dumps(message, sort_keys=True).encode()).hexdigest()
        if client.get(redis_boards.pushed_digest_key(key)) == digest:
            continue  # something below the top 10 changed
        client.set(pushed, "1", px=1000)
        client.set(redis_boards.pushed_digest_key(key), digest, ex=86400)
        if layer is not None:
            async_to_sync(layer.group_send)(group_name(key), {"type": "board.top", "message": message})
        sent += 1
    if postponed:
        client.sadd(redis_boards.dirty_key(), *postponed)
    return sent


def histograms_refresh() -> int:
    """Beat, every minute: recompute the histogram of every board that changed since."""
    from .selectors import histogram

    client = redis_boards.client()
    keys = [str(k) for k in client.spop(redis_boards.histogram_dirty_key(), 10_000) or []]
    done = 0
    for key in keys:
        view = view_of(key)
        if view is not None and not view.frozen:
            histogram(view, refresh=True)
            done += 1
    return done
