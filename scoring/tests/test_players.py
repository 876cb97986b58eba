"""Profiles, privacy, account deletion and friends (docs/api.md)."""

import json

import pytest
from django.utils import timezone

from common.signing import signed_headers
from scoring.models import ScoreEvent
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

BASE = "/api/v1/games/arena"


def signed(client, key, method: str, path: str, body: dict | None = None):
    raw = json.dumps(body).encode() if body is not None else b""
    headers = signed_headers(key_id=key.key_id, secret=key.secret, method=method, path=path, body=raw)
    return client.generic(method, path, data=raw, content_type="application/json", headers=headers)


def seed(game, key, rows):
    for player, points in rows:
        submit_direct(game, key, match_body([{"player_id": player, "points": points}]), now=timezone.now())
    drain()


def top(client):
    return [
        (e["rank"], e["player_id"], e["score"], e["display_name"])
        for e in client.get(f"{BASE}/boards/all/top").json()["entries"]
    ]


def test_display_name_and_hiding_and_own_rank(client):
    game = make_game()
    key = make_key(game)
    seed(game, key, [("amy", 90), ("bob", 50), ("cat", 10)])
    renamed = signed(client, key, "PATCH", f"{BASE}/players/bob", {"display_name": "Bobby"})
    assert renamed.status_code == 200
    assert renamed.json() == {"player_id": "bob", "display_name": "Bobby", "hidden": False}
    assert top(client)[1] == (2, "bob", 50, "Bobby")

    assert signed(client, key, "PATCH", f"{BASE}/players/amy", {"hidden": True}).json()["hidden"] is True
    assert top(client) == [(1, "bob", 50, "Bobby"), (2, "cat", 10, None)]  # amy counts in nobody's rank
    assert client.get(f"{BASE}/boards/all/players/amy").json()["code"] == "not_ranked"
    assert client.get(f"{BASE}/boards/all/players/cat").json()["total"] == 2
    own = signed(client, key, "GET", f"{BASE}/players/amy/rank?board=all")
    assert own.json() == {"player_id": "amy", "score": 90, "rank": 1, "hidden": True}
    # Results while hidden stay off the boards, and come back with the player.
    seed(game, key, [("amy", 5)])
    assert all(p != "amy" for _, p, _, _ in top(client))
    assert boards_diff(game=game, now=timezone.now()) == {}
    signed(client, key, "PATCH", f"{BASE}/players/amy", {"hidden": False})
    assert top(client)[0] == (1, "amy", 95, None)
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_patch_and_rank_errors(client):
    game = make_game()
    key = make_key(game)
    assert signed(client, key, "PATCH", f"{BASE}/players/amy", {"hidden": "yes"}).status_code == 400
    assert signed(client, key, "PATCH", f"{BASE}/players/amy", {}).status_code == 400
    assert client.patch(f"{BASE}/players/amy", data="{}", content_type="application/json").status_code == 401
    assert signed(client, key, "GET", f"{BASE}/players/amy/rank").json()["code"] == "not_ranked"


def test_account_deletion_removes_the_player_everywhere_for_good(client):
    game = make_game()
    key = make_key(game)
    seed(game, key, [("amy", 90), ("bob", 50), ("cat", 10)])
    signed(client, key, "PUT", f"{BASE}/players/bob/friends/amy")
    response = signed(client, key, "DELETE", f"{BASE}/players/amy")
    assert response.status_code == 204
    assert top(client) == [(1, "bob", 50, None), (2, "cat", 10, None)]
    assert not ScoreEvent.objects.filter(player_id="amy").exists()  # pseudonymised
    assert ScoreEvent.objects.filter(player_id__startswith="~deleted~").count() == 1
    seed(game, key, [("amy", 500)])  # a later result for the id is never shown
    assert all(p != "amy" for _, p, _, _ in top(client))
    assert [e["player_id"] for e in client.get(f"{BASE}/boards/all/players/bob/friends").json()["entries"]] == ["bob"]
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert signed(client, key, "DELETE", f"{BASE}/players/amy").status_code == 204  # idempotent


@pytest.mark.parametrize("rule", ["competition", "dense", "first"])
def test_friends_board_ranks_among_friends_with_board_ranks(client, rule):
    game = make_game(tie_rule=rule)
    key = make_key(game)
    seed(game, key, [("amy", 90), ("bob", 50), ("cat", 50), ("dan", 10), ("eve", 5)])
    for friend in ["cat", "eve", "zed"]:  # zed has no score: not listed
        assert signed(client, key, "PUT", f"{BASE}/players/dan/friends/{friend}").status_code == 204
    assert signed(client, key, "PUT", f"{BASE}/players/dan/friends/cat").status_code == 204  # idempotent
    entries = client.get(f"{BASE}/boards/all/players/dan/friends").json()["entries"]
    board_rank_cat = {"competition": 2, "dense": 2, "first": 3}[rule]
    board_rank_dan = {"competition": 4, "dense": 3, "first": 4}[rule]
    board_rank_eve = {"competition": 5, "dense": 4, "first": 5}[rule]
    assert [(e["player_id"], e["rank"], e["board_rank"], e["score"]) for e in entries] == [
        ("cat", 1, board_rank_cat, 50),
        ("dan", 2, board_rank_dan, 10),
        ("eve", 3, board_rank_eve, 5),
    ]
    # Mutual: cat's board lists dan too. Ending it is idempotent.
    assert "dan" in [e["player_id"] for e in client.get(f"{BASE}/boards/all/players/cat/friends").json()["entries"]]
    assert signed(client, key, "DELETE", f"{BASE}/players/cat/friends/dan").status_code == 204
    assert signed(client, key, "DELETE", f"{BASE}/players/cat/friends/dan").status_code == 204
    entries = client.get(f"{BASE}/boards/all/players/dan/friends").json()["entries"]
    assert [e["player_id"] for e in entries] == ["dan", "eve"]
    assert signed(client, key, "PUT", f"{BASE}/players/dan/friends/dan").status_code == 400
    assert client.put(f"{BASE}/players/dan/friends/amy").status_code == 401


def test_an_admin_deletes_an_account(client):
    from django.contrib.auth.models import User

    from boards.models import Player

    game = make_game()
    key = make_key(game)
    seed(game, key, [("amy", 90), ("bob", 50)])
    client.force_login(User.objects.create_superuser("root", password="pw"))
    amy = Player.objects.get(player_id="amy")
    client.post("/admin/boards/player/", {"action": "delete_accounts", "_selected_action": [amy.pk]})
    assert [p for _, p, _, _ in top(client)] == ["bob"]
    assert not ScoreEvent.objects.filter(player_id="amy").exists()
