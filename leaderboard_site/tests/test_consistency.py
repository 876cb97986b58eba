"""Reads agree with each other across web processes (docs/api.md): two real web servers on
one Redis. Once any read shows a result, every later read of that board on either process shows
it; a season switch reaches both at once, and /seasons never disagrees with the board reads."""

import json
import urllib.request

import pytest
from django.utils import timezone

from common.testing import free_port, start_web, stop
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from seasons.services import pointer_rollback, season_end

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture
def two_web_processes():
    ports = [free_port(), free_port()]
    webs = [start_web(port) for port in ports]
    try:
        yield [f"http://127.0.0.1:{port}" for port in ports]
    finally:
        for web in webs:
            stop(web)


def test_once_one_process_shows_a_result_every_read_on_both_shows_it(two_web_processes):
    a, b = two_web_processes
    game = make_game()
    key = make_key(game)
    base = "/api/v1/games/arena/boards/all"
    for i in range(20):
        submit_direct(game, key, match_body([{"player_id": f"p{i:02d}", "points": 100 + i}]), now=timezone.now())
    drain()
    for url in (a, b):  # both processes hold a cached top, a cached distribution and the catalog
        assert len(get(f"{url}{base}/top?n=100")["entries"]) == 20
        assert get(f"{url}{base}/distribution")["total"] == 20
    for step in range(15):
        player = f"new{step:02d}"
        submit_direct(game, key, match_body([{"player_id": player, "points": 1000 + step}]), now=timezone.now())
        drain()
        first, second = (a, b) if step % 2 else (b, a)
        assert get(f"{first}{base}/top?n=100")["entries"][0]["player_id"] == player
        for url in (first, second):
            assert get(f"{url}{base}/top?n=100")["entries"][0]["player_id"] == player
            assert get(f"{url}{base}/top?n=1")["entries"][0]["player_id"] == player
            assert get(f"{url}{base}/players/{player}")["rank"] == 1
            assert get(f"{url}{base}/players/p00/around?r=1")["entries"][-1]["player_id"] == "p00"
            assert get(f"{url}{base}/distribution")["total"] == 21 + step
            assert get(f"{url}{base}/players/p00")["total"] == 21 + step


def test_a_season_switch_reaches_both_processes_at_once(two_web_processes):
    a, b = two_web_processes
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "amy", "points": 5}]), now=timezone.now())
    drain()
    old = game.seasons.get().id
    for url in (a, b):
        assert get(f"{url}/api/v1/games/arena/boards/all/top")["season"] == old
        assert get(f"{url}/api/v1/games/arena/seasons")["current"] == old
    new = season_end(game=game, now=timezone.now(), grace_s=600).next_season
    assert new is not None
    for url in (a, b):  # no wait: the catalog's version in Redis moved with the switch
        assert get(f"{url}/api/v1/games/arena/seasons")["current"] == new.id
        assert get(f"{url}/api/v1/games/arena/boards/all/top")["season"] == new.id
        assert get(f"{url}/api/v1/games/arena/boards/all/players/amy?season={old}")["score"] == 5
        assert get(f"{url}/api/v1/games/arena")["current_season"] == new.id
    pointer_rollback(game=game, actor="ops")
    for url in (b, a):
        assert get(f"{url}/api/v1/games/arena/boards/all/top")["season"] == old
        assert get(f"{url}/api/v1/games/arena/seasons")["current"] == old
