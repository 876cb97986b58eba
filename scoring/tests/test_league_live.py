"""A league cohort over WebSockets (docs/api.md, "Leagues"; competitions/league_live.py and
consumers.py): the whole cohort on connect, a push after a result is applied, never two within a
second (the newest wins), only cohorts someone follows read, and the frozen cohort pushed by the
period's end."""

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.utils import timezone

from boards.events import publish_live
from common.redis import boards_client
from competitions import league_keys
from competitions.league_live import cohort_group, cohort_pushes
from competitions.league_periods import league_period_shown
from competitions.routing import websocket_urlpatterns as competition_sockets
from competitions.testing import make_league
from scoring.league_closing import league_period_close
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

HEADERS = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
application = URLRouter(competition_sockets)
DIVISIONS = [
    {"name": "bronze", "promote": 2, "demote": 0},
    {"name": "silver", "promote": 1, "demote": 1},
    {"name": "gold", "promote": 0, "demote": 2},
]


def play(game, key, points: dict[str, int], *, now=None) -> None:
    """Results applied as the worker would."""
    body = match_body([{"player_id": p, "points": n} for p, n in points.items()], played_at=now)
    submit_direct(game, key, body, now=now or timezone.now())
    drain()


def lines(message: dict) -> list[tuple[str, int, str]]:
    return [(e["player_id"], e["score"], e["zone"]) for e in message["entries"]]


async def opened(path: str) -> tuple[WebsocketCommunicator, dict]:
    socket = WebsocketCommunicator(application, path, headers=HEADERS)
    connected, _ = await socket.connect()
    assert connected, path
    return socket, await socket.receive_json_from(timeout=5)


async def closed(*sockets: WebsocketCommunicator) -> None:
    for socket in sockets:
        await socket.disconnect()
    await sync_to_async(connections.close_all)()


def test_the_cohort_on_connect_then_one_push_for_two_results_within_a_second(client):
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=5, divisions=DIVISIONS)
    play(game, key, {"maya": 50, "leo": 30, "kim": 5})
    index = league_period_shown(league, timezone.now()).index
    path = f"/ws/games/arena/leagues/weekly/cohorts/{index}-bronze-1/"

    async def scenario() -> None:
        socket, first = await opened(path)
        assert set(first) == {"type", "id", "league", "period", "division", "final", "entries"}
        assert (first["type"], first["id"], first["division"], first["final"]) == (
            "cohort",
            f"{index}-bronze-1",
            "bronze",
            False,
        )
        # 3 of 5: floor(2 x 3 / 5) = 1 up
        assert lines(first) == [("maya", 50, "promote"), ("leo", 30, "stay"), ("kim", 5, "stay")]

        # Two pushes within the second after the first message: one is sent, the newest.
        layer = get_channel_layer()
        group = cohort_group("arena", "weekly", f"{index}-bronze-1")
        for text in ('{"n":1}', '{"n":2}'):
            await layer.group_send(group, {"type": "board.top", "text": text, "period": index})
        assert await socket.receive_json_from(timeout=3) == {"n": 2}
        assert await socket.receive_nothing(timeout=1.2)  # the one before it was dropped, not queued

        # The message is the cohort read's answer, with its type.
        rest = await sync_to_async(client.get)(f"/api/v1/games/arena/leagues/weekly/cohorts/{index}-bronze-1")
        assert {k: v for k, v in first.items() if k != "type"} == rest.json()

        # Results applied: the publisher pushes the cohort.
        await sync_to_async(play)(game, key, {"amy": 40})
        await sync_to_async(play)(game, key, {"bob": 60})
        await sync_to_async(publish_live)()
        pushed = await socket.receive_json_from(timeout=3)
        assert lines(pushed) == [
            ("bob", 60, "promote"),
            ("maya", 50, "promote"),
            ("amy", 40, "stay"),
            ("leo", 30, "stay"),
            ("kim", 5, "stay"),
        ]

        # Another cohort's result pushes nothing here; nobody follows bronze 2: it is not even read.
        await sync_to_async(play)(game, key, {"zed": 1})  # the cohort is full: bronze 2
        await sync_to_async(publish_live)()
        assert await socket.receive_nothing(timeout=1.2)
        boards = [league_keys.cohort_board_key("arena", "weekly", index, 0, n) for n in (1, 2)]
        pushes = await sync_to_async(cohort_pushes)(boards, timezone.now())
        assert [push.key for push in pushes] == boards[:1]
        await closed(socket)

        # Its last follower gone, bronze 1 is not read either.
        watch = league_keys.watch_key("arena", "weekly", index)
        assert await sync_to_async(boards_client().hget)(watch, "0:1") == "0"
        assert await sync_to_async(cohort_pushes)(boards, timezone.now()) == []

    asyncio.run(scenario())


def test_the_period_end_pushes_the_frozen_cohort_and_an_unknown_cohort_is_refused():
    game = make_game()
    key = make_key(game)
    league = make_league(game, cohort_size=5, divisions=DIVISIONS)
    at = league.starts_at + timedelta(hours=2, minutes=30)  # period 3, past now
    play(game, key, {"maya": 50, "leo": 30}, now=at)

    async def scenario() -> None:
        socket, first = await opened("/ws/games/arena/leagues/weekly/cohorts/3-bronze-1/")
        assert (first["final"], first["period"]["status"]) == (False, "grace")  # past its grace, not frozen
        closed_now = timezone.now()
        assert await sync_to_async(league_period_close)(league_id=league.pk, index=3, now=closed_now)
        await sync_to_async(publish_live)()
        final = await socket.receive_json_from(timeout=3)
        assert (final["final"], final["period"]["status"]) == (True, "final")
        assert lines(final) == [("maya", 50, "stay"), ("leo", 30, "stay")]  # 2 of 5: floor(2 x 2 / 5) = 0 up

        stranger = WebsocketCommunicator(
            application, "/ws/games/arena/leagues/weekly/cohorts/3-bronze-9/", headers=HEADERS
        )
        connected, code = await stranger.connect()
        assert (connected, code) == (False, 4404)
        await closed(socket, stranger)  # a refused socket's application is ended too, or the loop waits on it

    asyncio.run(scenario())
