"""The season pointer on the read path: readers resolve it once per request; switching and rolling
back are seen by every read at once."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from boards.testing import record
from seasons.models import SeasonPointer
from seasons.services import pointer_rollback, pointer_set, season_end
from seasons.testing import make_game


@pytest.mark.django_db
def test_ending_a_season_moves_the_readers_and_an_operator_can_roll_them_back(client):
    game = make_game(start=timezone.now() - timedelta(days=3))
    old = game.seasons.get()
    ended = season_end(game=game, now=timezone.now(), grace_s=3600)
    assert ended.next_season is not None
    assert SeasonPointer.objects.get(game=game).season_id == ended.next_season.id
    assert client.get("/api/v1/games/arena/boards/all/top").json()["season"] == ended.next_season.id
    pointer_rollback(game=game, actor="ops", reason="ended by mistake")
    assert client.get("/api/v1/games/arena/boards/all/top").json()["season"] == old.id
    assert client.get("/api/v1/games/arena").json()["current_season"] == old.id


@pytest.mark.django_db(transaction=True)
def test_no_answer_mixes_two_seasons_while_the_pointer_flips():
    game = make_game(start=timezone.now() - timedelta(days=3))
    one = game.seasons.get()
    for i in range(12):
        record(game, f"old{i:02d}", 100 - i)
    ended = season_end(game=game, now=timezone.now(), grace_s=3600)
    two = ended.next_season
    assert two is not None
    for i in range(12):
        record(game, f"new{i:02d}", 100 - i, played_at=timezone.now() + timedelta(seconds=1))
    seasons = {one.id: one, two.id: two}
    stop = threading.Event()

    def flip() -> None:
        target = one.id
        while not stop.is_set():
            pointer_set(game=game, season=seasons[target], actor="test")
            target = two.id if target == one.id else one.id
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
    assert seen == {one.id, two.id}
