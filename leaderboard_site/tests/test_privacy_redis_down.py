"""Hiding and deleting a player while the boards' Redis is down (a redis-server of the test's own,
stopped for real): refused with 503 `boards_unavailable` and nothing stored, so no stored hide or
deletion is ever missing from the live boards; once Redis is back the retry is stored and the
player is on no public answer."""

import json

import pytest
from django.test import override_settings
from django.utils import timezone

from boards.models import Player
from common.signing import signed_headers
from scoring import players
from scoring.models import ScoreEvent
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

from .outage_tools import PrivateRedis

pytestmark = [pytest.mark.serial, pytest.mark.django_db, pytest.mark.timeout(120)]

BASE = "/api/v1/games/arena"


def signed(client, key, method: str, path: str, body: dict | None = None):
    raw = json.dumps(body).encode() if body is not None else b""
    headers = signed_headers(key_id=key.key_id, secret=key.secret, method=method, path=path, body=raw)
    return client.generic(method, path, data=raw, content_type="application/json", headers=headers)


def answered(response) -> tuple[int, str]:
    return response.status_code, response.json().get("code", "") if response.content else ""


@pytest.fixture
def redis():
    server = PrivateRedis()
    server.start()
    try:
        with override_settings(REDIS_URL=server.url, CELERY_BROKER_URL=server.url):
            yield server
    finally:
        server.close()


@pytest.fixture
def seeded(redis):
    game = make_game()
    key = make_key(game)
    for player, points in [("amy", 90), ("bob", 50), ("cat", 10)]:
        submit_direct(game, key, match_body([{"player_id": player, "points": points}]), now=timezone.now())
    drain()
    return game, key


def not_shown(game) -> set[str]:
    """The players the database says are hidden or deleted."""
    rows = Player.objects.filter(game=game).values_list("player_id", "hidden", "deleted_at")
    return {p for p, hidden, deleted in rows if hidden or deleted is not None}


def public_ids(client) -> set[str]:
    """Every player id on a public answer of the live `all` board: top, and each player's read."""
    top = client.get(f"{BASE}/boards/all/top?n=100")
    assert top.status_code == 200
    shown = {e["player_id"] for e in top.json()["entries"]}
    for player in ("amy", "bob", "cat"):
        answer = client.get(f"{BASE}/boards/all/players/{player}")
        if answer.status_code == 200:
            shown.add(player)
        for near in client.get(f"{BASE}/boards/all/players/{player}/around?r=5").json().get("entries", []):
            shown.add(near["player_id"])
    return shown


def test_hide_and_delete_while_redis_is_stopped_are_refused_and_store_nothing(client, redis, seeded):
    game, key = seeded
    assert public_ids(client) == {"amy", "bob", "cat"}
    redis.stop()
    hide = signed(client, key, "PATCH", f"{BASE}/players/amy", {"hidden": True})
    delete = signed(client, key, "DELETE", f"{BASE}/players/bob")
    assert answered(hide) == (503, "boards_unavailable")
    assert answered(delete) == (503, "boards_unavailable")

    redis.start()
    assert not (public_ids(client) & not_shown(game)), "a stored hide or deletion is shown"
    assert not_shown(game) == set(), "a refused hide or deletion stored nothing"
    assert ScoreEvent.objects.filter(game=game, player_id="bob").count() == 1
    assert public_ids(client) == {"amy", "bob", "cat"}  # as the database says: nobody hidden
    assert answered(signed(client, key, "PATCH", f"{BASE}/players/amy", {"hidden": True}))[0] == 200
    assert signed(client, key, "DELETE", f"{BASE}/players/bob").status_code == 204
    assert not_shown(game) >= {"amy", "bob"}
    assert public_ids(client) == {"cat"}
    assert boards_diff(game=game, now=timezone.now()) == {}


@pytest.mark.parametrize("request_kind", ["hide", "delete"])
def test_redis_stopping_in_the_middle_of_a_hide_or_deletion_stores_nothing_shown(
    client, redis, seeded, monkeypatch, request_kind
):
    """Redis stops after the player's id reached the hidden set and before their entries are taken
    off the boards: the request is refused and the database keeps them visible, so the boards
    (which still show them) and the database agree; nothing the database hides is ever shown."""
    game, key = seeded
    correct = players.player_correct

    def stop_then_correct(**kwargs):
        redis.stop()
        return correct(**kwargs)

    monkeypatch.setattr(players, "player_correct", stop_then_correct)
    if request_kind == "hide":
        answer = signed(client, key, "PATCH", f"{BASE}/players/amy", {"hidden": True})
    else:
        answer = signed(client, key, "DELETE", f"{BASE}/players/amy")
    assert answered(answer) == (503, "boards_unavailable")
    monkeypatch.setattr(players, "player_correct", correct)
    redis.start()
    assert not (public_ids(client) & not_shown(game)), "a stored hide or deletion is shown"
    assert not_shown(game) == set(), "the refused request stored nothing"

    retry = (
        signed(client, key, "PATCH", f"{BASE}/players/amy", {"hidden": True})
        if request_kind == "hide"
        else signed(client, key, "DELETE", f"{BASE}/players/amy")
    )
    assert retry.status_code in (200, 204)
    assert "amy" in not_shown(game)
    assert public_ids(client) == {"bob", "cat"}
