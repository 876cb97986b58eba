"""A tournament's live board over WebSockets (docs/api.md, "Tournaments"; competitions/live.py and
consumers.py): the top 10 on connect, a push after a result is applied by the worker's apply or by
a rewrite from the ledger, at most one a second, a follower moved on to the next period."""

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.utils import timezone

from boards import events
from boards.events import publish_live
from boards.routing import websocket_urlpatterns as board_sockets
from competitions.models import Tournament
from competitions.routing import websocket_urlpatterns as tournament_sockets
from scoring.models import ScoreEvent
from scoring.moderation import results_revoke
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tournament_freezing import tournament_period_freeze

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

HEADERS = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
application = URLRouter([*board_sockets, *tournament_sockets])  # as leaderboard_site/asgi.py mounts them
PATH = "/ws/games/arena/tournaments/cup/"
REWARDS = [{"rank_from": 1, "rank_to": 1, "reward": {"gems": 500}}]


def cup(game, **config) -> Tournament:
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=10)
    values = {"title": "Cup", "starts_at": start, "ends_at": start + timedelta(hours=2), "duration_s": 7200}
    values.update(config)
    return Tournament.objects.create(game=game, slug="cup", created_at=start, **values)


def play(game, key, player: str, points: int, *, played_at=None, now=None) -> None:
    """A result naming the cup, applied as the worker would (the database connection closed after:
    the test's thread and the consumers' share none)."""
    body = match_body([{"player_id": player, "points": points}], played_at=played_at, tournaments=["cup"])
    submit_direct(game, key, body, now=now or timezone.now())
    drain()


def players(message: dict) -> list[str]:
    return [e["player_id"] for e in message["entries"]]


async def opened(path: str) -> tuple[WebsocketCommunicator, dict]:
    socket = WebsocketCommunicator(application, path, headers=HEADERS)
    connected, _ = await socket.connect()
    assert connected, path
    return socket, await socket.receive_json_from(timeout=5)


async def closed(*sockets: WebsocketCommunicator) -> None:
    for socket in sockets:
        await socket.disconnect()
    await sync_to_async(connections.close_all)()  # the consumers' thread's connection


def test_top_10_on_connect_then_a_push_after_a_result_never_two_within_a_second():
    game = make_game()
    key = make_key(game)
    tournament = cup(game, rewards=REWARDS)
    for i in range(12):
        play(game, key, f"p{i:02d}", 100 + i)

    async def scenario() -> None:
        socket, first = await opened(PATH)
        connected = time.monotonic()
        assert set(first) == {"type", "tournament", "period", "entries"}
        assert (first["type"], first["tournament"]) == ("top", "cup")
        assert first["period"] == {
            "index": 1,
            "starts_at": tournament.starts_at.isoformat().replace("+00:00", "Z"),
            "ends_at": tournament.ends_at.isoformat().replace("+00:00", "Z"),
            "status": "active",
        }
        assert players(first) == [f"p{i:02d}" for i in range(11, 1, -1)]  # the top 10 only
        assert first["entries"][0] == {
            "rank": 1,
            "player_id": "p11",
            "display_name": None,
            "score": 111,
            "attempts": 1,
            "reward": {"gems": 500},
        }

        # Two results within the second: the pushes wait for it, and only the newest is sent.
        for player, points in [("amy", 500), ("bob", 600)]:
            await sync_to_async(play)(game, key, player, points)
            await sync_to_async(publish_live)()
            await asyncio.sleep(0.25)  # past the publisher's claim: each is sent to the group
        pushed = await socket.receive_json_from(timeout=2)
        assert time.monotonic() - connected >= 0.95
        assert players(pushed)[:3] == ["bob", "amy", "p11"]
        assert await socket.receive_nothing(timeout=1.2)  # the one before it was dropped, not queued

        # A change below the top 10 pushes nothing.
        await sync_to_async(play)(game, key, "low", 1)
        await sync_to_async(publish_live)()
        assert await socket.receive_nothing(timeout=1.2)
        await closed(socket)

    asyncio.run(scenario())


def test_a_rewrite_from_the_ledger_pushes_too():
    """`latest` boards are only ever rewritten (scoring/entries.py period_players_rewrite), by the
    worker's apply and by a revocation."""
    game = make_game()
    key = make_key(game)
    cup(game, scoring="latest")
    now = timezone.now()
    play(game, key, "maya", 10, played_at=now - timedelta(seconds=30))
    play(game, key, "leo", 20, played_at=now - timedelta(seconds=30))

    async def scenario() -> None:
        socket, first = await opened(PATH)
        assert [(e["player_id"], e["score"]) for e in first["entries"]] == [("leo", 20), ("maya", 10)]
        # maya's latest result is lower than her first: her score goes down (a best board's would not).
        await sync_to_async(play)(game, key, "maya", 5, played_at=now - timedelta(seconds=10))
        await sync_to_async(publish_live)()
        pushed = await socket.receive_json_from(timeout=3)
        assert [(e["player_id"], e["score"]) for e in pushed["entries"]] == [("leo", 20), ("maya", 5)]

        # Revoked: her 5 is off the board, her 10 (the latest still counted) back.
        revoked = await sync_to_async(ScoreEvent.objects.get)(player_id="maya", points=5)
        await sync_to_async(results_revoke)(event_ids=[revoked.id], reason="test")
        await sync_to_async(publish_live)()
        again = await socket.receive_json_from(timeout=3)
        assert [(e["player_id"], e["score"]) for e in again["entries"]] == [("leo", 20), ("maya", 10)]
        await closed(socket)

    asyncio.run(scenario())


def test_one_tick_pushes_the_season_board_and_the_tournament_board():
    """Both changed by one result: the publisher sends each to its own connections (a tournament's
    board key in the changed set once broke the whole tick)."""
    game = make_game()
    key = make_key(game)
    cup(game)

    async def scenario() -> None:
        board, _ = await opened("/ws/games/arena/boards/all/")
        tournament, _ = await opened(PATH)
        await sync_to_async(play)(game, key, "maya", 70)
        assert await sync_to_async(publish_live)() >= 2  # the season boards it changed, and the cup's
        on_board = await board.receive_json_from(timeout=3)
        on_cup = await tournament.receive_json_from(timeout=3)
        assert (on_board["board"], players(on_board)) == ("all", ["maya"])
        assert (on_cup["tournament"], players(on_cup)) == ("cup", ["maya"])
        await closed(board, tournament)

    asyncio.run(scenario())


def test_a_follower_moves_to_the_next_period_and_a_named_period_stays(monkeypatch):
    """Periods of a minute: at the minute, the follower is sent the new period (empty), the
    connection that named the old one is sent its new status (grace); then each gets its own
    period's results only."""
    game = make_game()
    key = make_key(game)
    now = timezone.now()
    boundary = datetime(now.year, now.month, now.day, now.hour, now.minute, tzinfo=UTC) + timedelta(minutes=2)
    cup(game, starts_at=boundary - timedelta(minutes=5), reset="* * * * *", duration_s=60, grace_s=30)
    offset = boundary - timedelta(seconds=1.5) - timezone.now()
    monkeypatch.setattr(events, "live_now", lambda: timezone.now() + offset)
    play(game, key, "amy", 50, played_at=boundary - timedelta(seconds=20), now=boundary - timedelta(seconds=2))

    async def scenario() -> None:
        follower, first = await opened(PATH)
        named, same = await opened(f"{PATH}?period=5")
        for message in (first, same):
            assert (message["period"]["index"], message["period"]["status"], players(message)) == (5, "active", ["amy"])
        rolled = await follower.receive_json_from(timeout=4)
        assert (rolled["period"]["index"], rolled["period"]["status"], rolled["entries"]) == (6, "active", [])
        graced = await named.receive_json_from(timeout=4)
        assert (graced["period"]["index"], graced["period"]["status"], players(graced)) == (5, "grace", ["amy"])

        # A result of the new period reaches the follower only; a late one of the old the other only.
        clock = events.live_now()
        await sync_to_async(play)(game, key, "bob", 70, played_at=boundary + timedelta(seconds=1), now=clock)
        await sync_to_async(play)(game, key, "cat", 90, played_at=boundary - timedelta(seconds=5), now=clock)
        await asyncio.sleep(1)
        await sync_to_async(publish_live)()
        pushed = await follower.receive_json_from(timeout=3)
        assert (pushed["period"]["index"], players(pushed)) == (6, ["bob"])
        late = await named.receive_json_from(timeout=3)
        assert (late["period"]["index"], players(late)) == (5, ["cat", "amy"])
        assert await follower.receive_nothing(timeout=1.2)
        await closed(follower, named)

    asyncio.run(scenario())


def test_an_unknown_game_tournament_or_period_is_refused():
    game = make_game()
    cup(game)

    async def scenario() -> None:
        for path in [
            "/ws/games/nope/tournaments/cup/",
            "/ws/games/arena/tournaments/nope/",
            f"{PATH}?period=0",
            f"{PATH}?period=9",  # after the next one (a single period: no next)
            f"{PATH}?period=%C2%B2",  # "²": not an integer int() reads
        ]:
            socket = WebsocketCommunicator(application, path, headers=HEADERS)
            connected, code = await socket.connect()
            assert (connected, code) == (False, 4404), path
            await socket.disconnect()
        await sync_to_async(connections.close_all)()

    asyncio.run(scenario())


def test_a_freeze_pushes_the_final_standings_to_the_periods_connections():
    game = make_game()
    key = make_key(game)
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=5)
    cup(game, starts_at=start, ends_at=None, duration_s=120, grace_s=30, rewards=REWARDS)
    play(game, key, "maya", 10, played_at=start + timedelta(seconds=5), now=start + timedelta(seconds=6))

    async def scenario() -> None:
        socket, first = await opened(PATH)
        assert (first["period"]["status"], players(first)) == ("grace", ["maya"])  # its grace is over, not frozen yet
        await asyncio.sleep(1.05)  # past the connection's one push a second
        frozen = await sync_to_async(tournament_period_freeze)(
            tournament_id=await sync_to_async(lambda: Tournament.objects.get().pk)(), index=1, now=timezone.now()
        )
        assert frozen
        await sync_to_async(publish_live)()
        pushed = await socket.receive_json_from(timeout=3)
        assert (pushed["period"]["status"], players(pushed)) == ("final", ["maya"])
        await closed(socket)

    asyncio.run(scenario())
