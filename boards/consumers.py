"""The live board: a WebSocket that only joins its board's group and relays pushes."""

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils import timezone

from common.observability import Gauge

from . import selectors
from .events import LIVE_TOP_N, group_name, top_message

# Summed over the live processes of the host; a process that ended (even SIGKILLed) drops out at
# the next scrape (common/observability.py).
CONNECTIONS = Gauge(
    "leaderboard_websocket_connections",
    "Live board WebSockets open now, by game.",
    ["game"],
    multiprocess_mode="livesum",
)


class BoardTopConsumer(AsyncJsonWebsocketConsumer):
    """`/ws/games/{game}/boards/{board}/?region=global`: the top 10 at once, then on change."""

    group: str | None = None
    counted: Any = None  # the gauge this connection counts in, once accepted

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        query = parse_qs(self.scope.get("query_string", b"").decode())
        region = (query.get("region") or ["global"])[0]
        first = await database_sync_to_async(self._snapshot)(kwargs["game"], kwargs["board"], region)
        if first is None:
            await self.close(code=4404)
            return
        group, message = first
        self.group = group
        await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        self.counted = CONNECTIONS.labels(kwargs["game"])  # a known game: _snapshot found it
        self.counted.inc()
        await self.send_json(message)

    def _snapshot(self, game_slug: str, board: str, region: str) -> tuple[str, dict[str, Any]] | None:
        try:
            view = selectors.board_view(
                slug=game_slug, board=board, region=region, season=None, period=None, now=timezone.now()
            )
        except (selectors.UnknownGame, selectors.UnknownBoard, selectors.UnknownSeason, selectors.BadQuery):
            return None
        return group_name(view.ref.key), top_message(view, selectors.board_top(view=view, n=LIVE_TOP_N))

    async def disconnect(self, code: int) -> None:
        if self.counted is not None:
            self.counted.dec()
            self.counted = None
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored."""

    async def board_top(self, event: dict[str, Any]) -> None:
        await self.send_json(event["message"])
