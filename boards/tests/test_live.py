"""The live board over WebSockets: the top 10 on connect, then pushes at most once a second."""

import asyncio
import itertools
import time
from datetime import UTC, datetime, timedelta
from datetime import time as clock_time

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.utils import timezone

from boards import events
from boards.events import publish_live
from boards.routing import websocket_urlpatterns
from boards.testing import record
from seasons.services import season_end
from seasons.testing import make_game

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

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

        received: list[tuple[float, dict]] = [(time.monotonic(), first)]  # the first message counts

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
        assert len(received) >= 2
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(received)]
        assert all(gap >= 0.95 for gap in gaps), gaps  # never two messages within a second, the first included
        assert [e["player_id"] for e in received[-1][1]["entries"]] == [f"p{i:03d}" for i in range(99, 89, -1)]

        # A change below the top 10 pushes nothing.
        await sync_to_async(submit)(game, "low", 1)
        await asyncio.sleep(1.05)
        await sync_to_async(publish_live)()
        assert await socket.receive_nothing(timeout=0.3)
        await socket.disconnect()
        await sync_to_async(connections.close_all)()  # the consumer's thread's connection

    asyncio.run(scenario())


def test_unknown_game_or_board_or_a_bad_region_or_period_is_refused():
    make_game()

    async def scenario() -> None:
        for path in [
            "/ws/games/nope/boards/all/",
            "/ws/games/arena/boards/nope/",
            "/ws/games/arena/boards/all/?period=2026-12-03",  # the season board has no period
            "/ws/games/arena/boards/daily/?period=2026-W49",  # a week on the day board
            "/ws/games/arena/boards/all/?region=Not%20one",
        ]:
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


def test_a_push_within_a_second_of_the_first_message_waits_and_only_the_newest_is_sent():
    game = make_game()
    submit(game, "amy", 50)

    async def scenario() -> None:
        socket = WebsocketCommunicator(application, "/ws/games/arena/boards/all/", headers=HEADERS)
        assert (await socket.connect())[0]
        await socket.receive_json_from(timeout=5)
        connected = time.monotonic()
        for player, points in [("bob", 60), ("cat", 70), ("dan", 80)]:  # three pushes within the second
            await sync_to_async(submit)(game, player, points)
            await sync_to_async(publish_live)()
            await asyncio.sleep(0.25)  # past the publisher's claim: each of them is sent to the group
        pushed = await socket.receive_json_from(timeout=2)
        assert time.monotonic() - connected >= 0.95
        assert [e["player_id"] for e in pushed["entries"]] == ["dan", "cat", "bob", "amy"]  # the newest only
        assert await socket.receive_nothing(timeout=1.2)  # the two before it were dropped, not queued
        await socket.disconnect()
        await sync_to_async(connections.close_all)()

    asyncio.run(scenario())


def moved_clock(monkeypatch, to: datetime) -> None:
    """The live pushes' clock (publisher and consumers) reads `to` now and runs on from there."""
    offset = to - timezone.now()
    monkeypatch.setattr(events, "live_now", lambda: timezone.now() + offset)


def test_a_daily_connection_follows_the_day_past_midnight_and_one_with_a_period_stays(monkeypatch):
    game = make_game()
    midnight = datetime.combine(timezone.now().date() + timedelta(days=1), clock_time(0), tzinfo=UTC)
    today, tomorrow = (midnight - timedelta(days=1)).date().isoformat(), midnight.date().isoformat()
    moved_clock(monkeypatch, midnight - timedelta(seconds=1.5))
    submit_at = sync_to_async(lambda player, points, at: record(game, player, points, played_at=at))
    record(game, "amy", 50, played_at=midnight - timedelta(minutes=5))

    async def scenario() -> None:
        follower = WebsocketCommunicator(application, "/ws/games/arena/boards/daily/", headers=HEADERS)
        fixed = WebsocketCommunicator(application, f"/ws/games/arena/boards/daily/?period={today}", headers=HEADERS)
        for socket in (follower, fixed):
            assert (await socket.connect())[0]
            first = await socket.receive_json_from(timeout=5)
            assert (first["period"], [e["player_id"] for e in first["entries"]]) == (today, ["amy"])

        # Midnight UTC: the follower is sent the new day's board (empty) by itself; the other stays.
        rolled = await follower.receive_json_from(timeout=4)
        assert (rolled["period"], rolled["entries"]) == (tomorrow, [])
        assert await fixed.receive_nothing(timeout=0.1)

        # A result of the new day reaches the follower only; a late one of yesterday the other only.
        await submit_at("bob", 70, midnight + timedelta(seconds=1))
        await submit_at("cat", 90, midnight - timedelta(seconds=10))
        await sync_to_async(publish_live)()
        pushed = await follower.receive_json_from(timeout=3)
        assert (pushed["period"], [e["player_id"] for e in pushed["entries"]]) == (tomorrow, ["bob"])
        late = await fixed.receive_json_from(timeout=3)
        assert (late["period"], [e["player_id"] for e in late["entries"]]) == (today, ["cat", "amy"])
        assert await follower.receive_nothing(timeout=1.2)
        for socket in (follower, fixed):
            await socket.disconnect()
        await sync_to_async(connections.close_all)()

    asyncio.run(scenario())


def test_a_connection_follows_the_new_season_once_the_old_one_ends():
    game = make_game()
    submit(game, "amy", 50)

    async def scenario() -> None:
        follower = WebsocketCommunicator(application, "/ws/games/arena/boards/all/", headers=HEADERS)
        assert (await follower.connect())[0]
        await follower.receive_json_from(timeout=5)
        ended = await sync_to_async(season_end)(game=game, now=timezone.now(), grace_s=3600)
        assert ended.next_season is not None
        await asyncio.sleep(1)  # the season's last second
        # The old season in its grace window still changes; the follower is shown the new one's.
        await sync_to_async(submit)(game, "bob", 70)  # played now: the new season
        await sync_to_async(record)(game, "cat", 90, played_at=ended.season.ends_at - timedelta(seconds=5))
        await sync_to_async(publish_live)()
        pushed = await follower.receive_json_from(timeout=3)
        assert [e["player_id"] for e in pushed["entries"]] == ["bob"]
        assert await follower.receive_nothing(timeout=1.2)
        await follower.disconnect()
        await sync_to_async(connections.close_all)()

    asyncio.run(scenario())
