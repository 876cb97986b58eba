"""Extra board dimensions declared per game (config, no code): a country board, for instance."""

import uuid

import pytest
from django.utils import timezone

from common.redis import client as redis_client
from scoring.rebuild import boards_rebuild
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, result_path, signed_post, submit_direct

pytestmark = pytest.mark.django_db


def test_a_declared_dimension_gets_its_own_boards(client):
    game = make_game()
    game.dimensions = ["country"]
    game.save()
    key = make_key(game)
    rows = [("amy", 30, "de"), ("bob", 20, "fr"), ("cat", 10, "de"), ("dan", 5, None)]
    for player, points, country in rows:
        result = {"player_id": player, "points": points, "region": "eu", **({"country": country} if country else {})}
        assert submit_direct(game, key, match_body([result]), now=timezone.now()).http_status == 202
    drain()
    base = "/api/v1/games/arena/boards"
    de = client.get(f"{base}/all/top?region=country-de").json()
    assert [(e["rank"], e["player_id"]) for e in de["entries"]] == [(1, "amy"), (2, "cat")]
    assert client.get(f"{base}/weekly/players/bob?region=country-fr").json()["rank"] == 1
    assert len(client.get(f"{base}/all/top?region=eu").json()["entries"]) == 4
    assert boards_diff(game=game, now=timezone.now()) == {}
    redis_client().flushall()
    boards_rebuild(game=game)
    assert boards_diff(game=game, now=timezone.now()) == {}
    bad = signed_post(
        client, key, result_path(game, uuid.uuid4()), match_body([{"player_id": "x", "points": 1, "country": "DE!"}])
    )
    assert bad.status_code == 400 and "country" in bad.json()["results"][0]


def test_undeclared_dimensions_are_refused_like_any_unknown_field():
    game = make_game()
    key = make_key(game)
    body = match_body([{"player_id": "amy", "points": 3, "country": "de"}])
    outcome = submit_direct(game, key, body, now=timezone.now())
    assert outcome.http_status == 400 and outcome.body["results"][0] == {"country": ["Unknown field."]}
