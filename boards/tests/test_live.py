"""The live board over WebSockets: the top 10 on connect, then pushes at most once a second."""

import asyncio
import itertools
import time

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections

from boards.events import publish_live
from boards.routing import websocket_urlpatterns
from boards.testing import record
from seasons.testing import make_game

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

HEADERS = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
application = URLRouter(websocket_urlpatterns)  # the boards' routes, as leaderboard_site/asgi.py mounts them


def submit(game, player: str, points: int) -> None:
    """A result applied to the boards as the worker would."""
    record(game, player, points)


def test_top_on_connect_then_at_most_one_push_per_second_under_a_burst():
    game = make_game()
    submit(game, "amy", 50)

    async def scenario() -> None:
        socket = WebsocketCommunicator(application, "/ws/games/arena/boards/all/?region=global", headers=HEADERS)
        connected, _ = await socket.connect()
        assert connected
        first = await socket.receive_json_from(timeout=5)
        assert first["type"] == "top" and first["board"] == "all" and first["period"] is None
        assert [(e["rank"], e["player_id"], e["score"]) for e in first["entries"]] == [(1, "amy", 50)]

        stop = asyncio.Event()

        async def beat() -> None:  # the publisher ticks faster than the real beat, to tempt it
            while not stop.is_set():
                await sync_to_async(publish_live)()
                await asyncio.sleep(0.1)

        received: list[tuple[float, dict]] = []

        async def reader() -> None:  # records when each push arrives, while the burst goes on
            while not stop.is_set():
                # receive_nothing peeks without timing out the consumer (a receive timeout cancels it)
                if not await socket.receive_nothing(timeout=0.02, interval=0.005):
                    received.append((time.monotonic(), await socket.receive_json_from(timeout=1)))

        ticker = asyncio.ensure_future(beat())
        listening = asyncio.ensure_future(reader())
        for i in range(100):  # a burst of 100 score events, applied as they come
            await sync_to_async(submit)(game, f"p{i:03d}", 100 + i)
        await asyncio.sleep(2.5)
        stop.set()
        await ticker
        await listening
        assert len(received) >= 1
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(received)]
        assert all(gap >= 0.9 for gap in gaps), gaps  # never two pushes for one board within a second
        assert [e["player_id"] for e in received[-1][1]["entries"]] == [f"p{i:03d}" for i in range(99, 89, -1)]

        # A change below the top 10 pushes nothing.
        await sync_to_async(submit)(game, "low", 1)
        await asyncio.sleep(1.05)
        await sync_to_async(publish_live)()
        assert await socket.receive_nothing(timeout=0.3)
        await socket.disconnect()
        await sync_to_async(connections.close_all)()  # the consumer's thread's connection

    asyncio.run(scenario())


def test_unknown_game_or_board_is_refused():
    make_game()

    async def scenario() -> None:
        for path in ["/ws/games/nope/boards/all/", "/ws/games/arena/boards/nope/"]:
            socket = WebsocketCommunicator(application, path, headers=HEADERS)
            connected, _ = await socket.connect()
            assert not connected
            await socket.disconnect()  # the consumer stops (else its layer receive lingers to the loop's end)
        await sync_to_async(connections.close_all)()

    asyncio.run(scenario())


def publish_then_close() -> int:
    try:
        return publish_live()
    finally:
        connections.close_all()


def test_two_publishers_at_once_send_one_message_per_board():
    game = make_game()
    submit(game, "amy", 50)

    async def scenario() -> None:
        socket = WebsocketCommunicator(application, "/ws/games/arena/boards/all/", headers=HEADERS)
        assert (await socket.connect())[0]
        await socket.receive_json_from(timeout=5)
        await sync_to_async(submit)(game, "bob", 90)
        # Two web-sized publishers (as if two beat processes ran) tick at the same moment.
        sent = await asyncio.gather(
            sync_to_async(publish_then_close, thread_sensitive=False)(),
            sync_to_async(publish_then_close, thread_sensitive=False)(),
        )
        assert sorted(sent)[-1] >= 1 and sum(sent) == sorted(sent)[-1]  # only one of them pushed
        pushed = await socket.receive_json_from(timeout=5)
        assert [e["player_id"] for e in pushed["entries"]] == ["bob", "amy"]
        assert await socket.receive_nothing(timeout=0.5)
        await socket.disconnect()
        await sync_to_async(connections.close_all)()

    asyncio.run(scenario())
