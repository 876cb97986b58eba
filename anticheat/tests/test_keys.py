"""Server keys and signatures (docs/api.md), checked where they are decided: request_verify."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from anticheat.models import AuditEntry, ServerKey
from anticheat.services import request_verify, server_key_revoke, server_key_rotate
from anticheat.testing import make_key
from common.api_errors import ApiError
from common.signing import signed_headers
from seasons.testing import make_game

pytestmark = pytest.mark.django_db

PATH = "/api/v1/games/arena/matches/8f14e45f-ceea-4e1b-9b2a-6f1c2d3e4a5b/results"
BODY = b'{"played_at":"2026-10-13T20:14:07Z","duration_s":540,"results":[{"player_id":"a","points":1}]}'


def verify(key: ServerKey, *, game: str = "arena", skew_s: int = 0, secret: str | None = None, body: bytes = BODY):
    now = timezone.now()
    headers = signed_headers(
        key_id=key.key_id,
        secret=secret or key.secret,
        method="POST",
        path=PATH,
        body=BODY,
        timestamp=int(now.timestamp()) + skew_s,
    )
    return request_verify(game_slug=game, method="POST", path=PATH, body=body, headers=headers, now=now)


def refused(**kwargs) -> tuple[int, str]:
    with pytest.raises(ApiError) as caught:
        verify(**kwargs)
    return caught.value.status_code, caught.value.code


def test_a_signed_request_names_its_key_and_anything_else_is_401_or_403():
    game = make_game()
    key = make_key(game)
    assert verify(key) == key
    assert verify(key, skew_s=300) == key and verify(key, skew_s=-300) == key
    assert refused(key=key, skew_s=301) == (401, "authentication_failed")
    assert refused(key=key, skew_s=-301) == (401, "authentication_failed")
    assert refused(key=key, secret="wrong") == (401, "authentication_failed")
    assert refused(key=key, body=BODY.replace(b'"points":1', b'"points":9')) == (401, "authentication_failed")
    make_game("other")
    assert refused(key=key, game="other") == (403, "permission_denied")
    with pytest.raises(ApiError) as missing:
        request_verify(game_slug="arena", method="POST", path=PATH, body=BODY, headers={}, now=timezone.now())
    assert (missing.value.status_code, missing.value.code) == (401, "not_authenticated")


def test_a_revoked_key_stops_at_once_and_a_rotated_one_retires_after_its_overlap():
    game = make_game()
    old = make_key(game)
    new = server_key_rotate(key_id=old.key_id, overlap_s=600, now=timezone.now())
    assert verify(old) == old and verify(new) == new  # both work during the overlap
    ServerKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    old.refresh_from_db()
    assert refused(key=old) == (401, "authentication_failed")
    assert verify(new) == new
    server_key_revoke(key_id=new.key_id)
    new.refresh_from_db()
    assert refused(key=new) == (401, "authentication_failed")


def test_create_server_key_prints_the_secret_once_and_audits_it():
    make_game()
    out = io.StringIO()
    call_command("create_server_key", "arena", "--label", "eu-1", stdout=out)
    created = json.loads(out.getvalue())
    key = ServerKey.objects.get(key_id=created["key_id"])
    assert (key.secret, key.label) == (created["secret"], "eu-1")
    assert AuditEntry.objects.filter(action="create_key", target=key.key_id).exists()
