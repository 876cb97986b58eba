"""The signed PUT and DELETE of a board kind's tiers (docs/api.md, "Tiers"): stored with the
game, published in its catalog; a refused body stores nothing."""

import pytest

from competitions.testing import signed_call
from scoring.testing import make_game, make_key
from seasons.catalog import catalog_get
from seasons.models import Game

pytestmark = pytest.mark.django_db
PATH = "/api/v1/games/arena/boards/all/tiers"
BODY = {
    "by": "percent",
    "tiers": [{"name": "diamond", "cutoff": 1}, {"name": "gold", "cutoff": 10.5}, {"name": "rest"}],
}


def test_put_stores_the_tiers_with_the_game_and_delete_removes_them(client, django_capture_on_commit_callbacks):
    game = make_game()
    key = make_key(game)
    with django_capture_on_commit_callbacks(execute=True):
        answer = signed_call(client, key, "PUT", PATH, BODY)
    assert answer.status_code == 200
    assert answer.json() == {
        "by": "percent",
        "tiers": [
            {"name": "diamond", "cutoff": 1},
            {"name": "gold", "cutoff": 10.5},
            {"name": "rest", "cutoff": None},
        ],
    }
    assert Game.objects.get().tiers == {"all": answer.json()}
    assert catalog_get(slug="arena").game.tiers == {"all": answer.json()}
    weekly = signed_call(
        client, key, "PUT", "/api/v1/games/arena/boards/weekly/tiers", {"by": "rank", "tiers": [{"name": "x"}]}
    )
    assert weekly.status_code == 200
    assert set(Game.objects.get().tiers) == {"all", "weekly"}
    with django_capture_on_commit_callbacks(execute=True):
        removed = signed_call(client, key, "DELETE", PATH)
    assert removed.status_code == 204
    assert set(Game.objects.get().tiers) == {"weekly"}
    assert "all" not in catalog_get(slug="arena").game.tiers
    assert signed_call(client, key, "DELETE", PATH).status_code == 204  # again: nothing to remove


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        (
            PATH,
            {"by": "percent", "tiers": [{"name": "a", "cutoff": 10}, {"name": "b", "cutoff": 5}, {"name": "c"}]},
            400,
            "invalid",
        ),
        (PATH, {"by": "score"}, 400, "invalid"),
        (PATH, [1, 2], 400, "invalid"),
        ("/api/v1/games/arena/boards/elo/tiers", BODY, 404, "unknown_board"),
    ],
)
def test_a_refused_put_stores_nothing(client, path, body, status, code):
    game = make_game()
    key = make_key(game)
    answer = signed_call(client, key, "PUT", path, body)
    assert (answer.status_code, answer.json()["code"]) == (status, code)
    assert Game.objects.get().tiers == {}


def test_unsigned_writes_are_refused(client):
    make_game()
    assert client.put(PATH, BODY, content_type="application/json").status_code == 401
    assert client.delete(PATH).status_code == 401
