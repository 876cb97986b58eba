"""The season pointer: readers resolve it once per request; switching and rolling back are instant."""

import io
import json
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from leaderboard_site.testing import drain, make_game, make_key, match_body, submit_direct
from seasons.models import SeasonPointer, SeasonPointerChange
from seasons.selectors import catalog_clear
from seasons.services import pointer_rollback, pointer_set


def end_season(*args: str) -> dict:
    out = io.StringIO()
    call_command("end_season", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_end_season_moves_the_pointer_and_an_operator_can_roll_it_back(client):
    game = make_game(start=timezone.now() - timedelta(days=3))
    old = game.seasons.get()
    assert SeasonPointer.objects.get(game=game).season == old
    answer = end_season("arena", "--grace-s", "3600")
    pointer = SeasonPointer.objects.get(game=game)
    assert pointer.season_id == answer["next"] and pointer.version == 2
    catalog_clear()
    assert client.get("/api/v1/games/arena/boards/all/top").json()["season"] == answer["next"]
    pointer_rollback(game=game, actor="ops", reason="ended by mistake")
    catalog_clear()
    assert client.get("/api/v1/games/arena/boards/all/top").json()["season"] == old.id
    assert client.get("/api/v1/games/arena").json()["current_season"] == old.id
    assert list(SeasonPointerChange.objects.filter(game=game).values_list("version", "to_season_id")) == [
        (3, old.id),
        (2, answer["next"]),
        (1, old.id),
    ]


@pytest.mark.django_db(transaction=True)
def test_no_answer_mixes_two_seasons_while_the_pointer_flips():
    game = make_game(start=timezone.now() - timedelta(days=3))
    key = make_key(game)
    one = game.seasons.get()
    for i in range(12):
        submit_direct(game, key, match_body([{"player_id": f"old{i:02d}", "points": 100 - i}]), now=timezone.now())
    two = end_season("arena", "--grace-s", "3600")["next"]
    for i in range(12):
        submit_direct(game, key, match_body([{"player_id": f"new{i:02d}", "points": 100 - i}]), now=timezone.now())
    drain()
    from seasons.models import Season

    seasons = {one.id: one, two: Season.objects.get(pk=two)}
    stop = threading.Event()

    def flip() -> None:
        target = one.id
        while not stop.is_set():
            pointer_set(game=game, season=seasons[target], actor="test")
            catalog_clear()
            target = two if target == one.id else one.id
        connection.close()

    flipper = threading.Thread(target=flip)
    flipper.start()
    reader = Client()
    seen = set()
    try:
        for _ in range(150):
            body = reader.get("/api/v1/games/arena/boards/all/top?n=12").json()
            prefix = "old" if body["season"] == one.id else "new"
            assert all(e["player_id"].startswith(prefix) for e in body["entries"]), body
            seen.add(body["season"])
    finally:
        stop.set()
        flipper.join()
        connection.close()
    assert seen == {one.id, two}
