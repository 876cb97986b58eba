"""Server key commands (docs/api.md)."""

import io
import json
import uuid

import pytest
from django.core.management import call_command

from scoring.testing import make_game, make_key, match_body, result_path, signed_post

pytestmark = pytest.mark.django_db


def command(*args: str) -> dict:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue())


def test_create_then_revoke_a_key_and_it_stops_working_at_once(client):
    game = make_game()
    created = command("create_server_key", "arena")
    assert set(created) == {"key_id", "secret"}
    key = make_key(game)
    key.key_id, key.secret = created["key_id"], created["secret"]
    body = match_body([{"player_id": "a", "points": 1}])
    assert signed_post(client, key, result_path(game, uuid.uuid4()), body).status_code == 202
    assert command("revoke_server_key", created["key_id"]) == {"key_id": created["key_id"], "revoked": True}
    assert signed_post(client, key, result_path(game, uuid.uuid4()), body).status_code == 401


def test_create_game_prints_game_and_season():
    answer = command("create_game", "quest", "--name", "Quest", "--tie-rule", "dense", "--season-days", "7")
    assert answer["game"] == "quest" and isinstance(answer["season"], int)


def test_a_rotated_pair_both_work_during_the_overlap_then_the_old_one_retires(client):
    from datetime import timedelta

    from django.utils import timezone

    from anticheat.models import ServerKey

    game = make_game()
    old = make_key(game)
    new_answer = command("rotate_server_key", old.key_id, "--overlap-s", "600")
    assert new_answer["retires"] == old.key_id
    new = ServerKey.objects.get(key_id=new_answer["key_id"])
    assert new.secret == new_answer["secret"]
    body = match_body([{"player_id": "a", "points": 1}])
    assert signed_post(client, old, result_path(game, uuid.uuid4()), body).status_code == 202
    assert signed_post(client, new, result_path(game, uuid.uuid4()), body).status_code == 202
    ServerKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert signed_post(client, old, result_path(game, uuid.uuid4()), body).status_code == 401
    assert signed_post(client, new, result_path(game, uuid.uuid4()), body).status_code == 202
