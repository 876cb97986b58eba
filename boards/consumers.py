"""The live board: a WebSocket that joins its board's group and relays pushes, at most one a second
(the pacing, `PacedTopConsumer`, is a tournament's live board's too: competitions/consumers.py).

Without `period=` a connection follows the game's current board of its kind and region: it joins
the kind's follow group, which the publisher (boards/events.py) sends the current season's and
period's board to, and when its period ends (midnight UTC for `daily`) it sends the new period's
top 10 itself. With `period=` it stays on that board (its own group).

What the client sees is paced here, per connection: a message is sent at once when a second has
passed since this connection's last one (the top 10 on connect counts), else held and sent when
the second is up; a newer message replaces a held one (the top 10 is a state: only the newest
counts), and one equal to the last sent is not sent again.
"""

import asyncio
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from common.observability import Gauge

from . import events, selectors
from .kinds import KINDS

logger = logging.getLogger(__name__)

# Summed over the live processes of the host; a process that ended (even SIGKILLed) drops out at
# the next scrape (common/observability.py).
CONNECTIONS = Gauge(
    "leaderboard_websocket_connections",
    "Live board WebSockets open now, by game.",
    ["game"],
    multiprocess_mode="livesum",
)


class PacedTopConsumer(AsyncWebsocketConsumer):
    """A live top 10's connection, paced (the module docstring): what a board's and a tournament's
    (competitions/consumers.py) connections share. A subclass's `connect` joins `group`, accepts,
    counts itself (`connected`) and offers the first message; the publisher's pushes (events.py)
    arrive as `board.top` messages."""

    group: str | None = None
    counted: Any = None  # the gauge this connection counts in, once accepted
    following = False  # no period asked for: the current one's board
    period: Any = None  # the period of the board shown (following: never goes back)
    held: str | None = None  # the newest message not sent yet
    sent: str | None = None  # the last message sent
    not_before = 0.0  # the event loop's time before which nothing more is sent
    sender: asyncio.Task[None] | None = None
    roller: asyncio.Task[None] | None = None

    def connected(self, game: str) -> None:
        self.counted = CONNECTIONS.labels(game)
        self.counted.inc()

    async def disconnect(self, code: int) -> None:
        for task in (self.sender, self.roller):
            if task is not None:
                task.cancel()
        if self.counted is not None:
            self.counted.dec()
            self.counted = None
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients only listen; anything they send is ignored."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        """A push goes straight to `board_top`. Channels' own dispatch first closes the thread's
        stale database connections through the one sync thread (a thread hop for each message and
        connection, one after the other: the most of a push's cost to 500 connections of a
        process); relaying a push touches no database."""
        if message["type"] == "board.top":
            self.board_top(message)
            return
        await super().dispatch(message)

    def board_top(self, event: dict[str, Any]) -> None:
        """A push of the publisher. A follower takes no board of a period before the one it shows
        (a late push of yesterday's board after its own move to today)."""
        period = event["period"]
        if self.following and period is not None and self.period is not None:
            if period < self.period:  # labels of one kind, and indexes, sort as their periods do
                return
            self.period = period
        self._offer(event["text"])

    def _offer(self, text: str) -> None:
        """Send `text` as soon as this connection may: the newest message wins."""
        self.held = text
        if self.sender is None:
            self.sender = asyncio.ensure_future(self._send_held())

    async def _send_held(self) -> None:
        """The one task that sends: waits for the second to pass, then sends the newest message."""
        loop = asyncio.get_running_loop()
        try:
            while self.held is not None:
                wait = self.not_before - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                text, self.held = self.held, None
                if text is None or text == self.sent:
                    continue
                try:
                    await self.send(text_data=text)
                except OSError:  # the client went away (uvicorn's ClientDisconnected): disconnect() follows
                    return
                self.sent = text
                # From when the send returned: the next one leaves a full second after this one.
                self.not_before = loop.time() + events.MIN_INTERVAL_S
        finally:
            self.sender = None


class BoardTopConsumer(PacedTopConsumer):
    """`/ws/games/{game}/boards/{board}/?region=global[&period=...]`: the top 10 at once, then on
    change, at most once a second."""

    board_args: tuple[str, str, str, str | None]  # game, board, region, period (None: follow)
    period: str | None = None

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.board_args = (
            kwargs["game"],
            kwargs["board"],
            (query.get("region") or ["global"])[0],
            (query.get("period") or [None])[0],
        )
        first = await database_sync_to_async(self._snapshot)()
        if first is None:
            await self.close(code=4404)
            return
        view, text = first
        self.following = self.board_args[3] is None
        self.period = view.period
        self.group = (
            events.follow_group(view.game.slug, view.board, view.region)
            if self.following
            else events.group_name(view.ref.key)
        )
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.connected(kwargs["game"])  # a known game: _snapshot found it
        self._offer(text)
        if self.following and KINDS[view.board].periodic:
            self.roller = asyncio.ensure_future(self._follow_periods())

    def _snapshot(self) -> tuple[selectors.BoardView, str] | None:
        game, board, region, period = self.board_args
        try:
            view = selectors.board_view(
                slug=game, board=board, region=region, season=None, period=period, now=events.live_now()
            )
        except (selectors.UnknownGame, selectors.UnknownBoard, selectors.UnknownSeason, selectors.BadQuery):
            return None
        entries = selectors.board_top(view=view, n=events.LIVE_TOP_N)
        return view, events.top_text(events.top_message(view, entries))

    async def _follow_periods(self) -> None:
        """A follower of a periodic board: when its period ends, the new period's top 10 (usually
        empty), unless a push of it came first."""
        kind = KINDS[self.board_args[1]]
        while True:
            assert self.period is not None
            wait = (events.next_period_start(kind, self.period) - events.live_now()).total_seconds()
            await asyncio.sleep(max(0.05, wait))
            try:
                now = await database_sync_to_async(self._snapshot)()
            except Exception:  # Redis unreachable, say: the next try in a few seconds
                logger.warning("live: the new period of %s not read; trying again", self.board_args, exc_info=True)
                await asyncio.sleep(5)
                continue
            if now is None:  # the game or its season went away: nothing to follow
                return
            view, text = now
            if view.period is not None and view.period > self.period:
                self.period = view.period
                self._offer(text)
