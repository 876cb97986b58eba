"""The single-result fast path answers exactly what the Django view answers (status, headers and
body), stores each match once however requests are grouped, and hands every other case to Django
with its body intact."""

import json
import time
import uuid

import pytest
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.db import connection
from django.test import override_settings

from common.operations import FAST_ANSWERS
from common.signing import signed_headers
from common.testing import asgi_request, asgi_requests_together
from scoring import fastpath
from scoring.fastpath import FastSingles
from scoring.models import MatchSubmission, ScoreEvent
from scoring.testing import make_game, make_key, match_body, result_path

pytestmark = pytest.mark.django_db

DJANGO = get_asgi_application()
FAST = FastSingles(DJANGO)


async def _no_django(scope, receive, send):
    raise AssertionError(f"Django was asked for {scope['method']} {scope['path']}")


FAST_ONLY = FastSingles(_no_django)  # the fast entrance with nothing behind it
SUBMIT = "match_results_submit"


def post(app, key, match_id, body, *, secret=None, tamper=None, query=""):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    path = result_path("arena", match_id)
    headers = signed_headers(
        key_id=key.key_id,
        secret=secret or key.secret,
        method="POST",
        path=path + (f"?{query}" if query else ""),
        body=raw,
    )
    sent = tamper if tamper is not None else raw
    return asgi_request(
        app, path, query, method="POST", body=sent, headers=[("Content-Type", "application/json"), *headers.items()]
    )


def same(key, body, *, fast: bool = True, **options) -> int:
    """The same request (each its own match id) through both apps: identical answers but for the id.
    `fast`: a group of the fast entrance answers it (with nothing behind it, counted as its answer);
    else the fast entrance hands it to Django."""
    fast_id, slow_id = uuid.uuid4(), uuid.uuid4()
    before = FAST_ANSWERS[SUBMIT]
    answered = post(FAST_ONLY if fast else FAST, key, fast_id, body, **options)
    assert FAST_ANSWERS[SUBMIT] == before + (1 if fast else 0), "answered by the wrong entrance"
    slow = post(DJANGO, key, slow_id, body, **options)
    assert answered.status_code == slow.status_code
    assert answered.raw_headers == slow.raw_headers
    assert answered.content.replace(str(fast_id).encode(), b"ID") == slow.content.replace(str(slow_id).encode(), b"ID")
    return answered.status_code


def test_accepted_replayed_and_conflicting_answers_are_byte_identical():
    game = make_game()
    key = make_key(game)
    body = match_body(
        [{"player_id": "amy", "points": 30, "display_name": "Amy Ørsted"}, {"player_id": "bo", "points": 5}]
    )
    fast_id, slow_id = uuid.uuid4(), uuid.uuid4()
    answers = {}
    before = FAST_ANSWERS[SUBMIT]
    for name, app, match_id in [("fast", FAST_ONLY, fast_id), ("slow", DJANGO, slow_id)]:
        first = post(app, key, match_id, body)
        again = post(app, key, match_id, body)
        other = post(app, key, match_id, {**body, "duration_s": 541})
        answers[name] = [
            (r.status_code, r.raw_headers, r.content.replace(str(match_id).encode(), b"ID"))
            for r in (first, again, other)
        ]
    assert answers["fast"] == answers["slow"]
    assert FAST_ANSWERS[SUBMIT] == before + 3  # each answered by a group of the fast entrance
    assert [status for status, _, _ in answers["fast"]] == [202, 200, 409]
    assert ("Idempotent-Replayed", "true") in answers["fast"][1][1]
    assert ScoreEvent.objects.count() == 4


def test_invalid_matches_and_closed_seasons_are_answered_alike():
    game = make_game()
    key = make_key(game)
    assert same(key, match_body([{"player_id": "amy", "points": -1}])) == 400
    assert (
        same(key, {"played_at": "2020-01-01T00:00:00Z", "duration_s": 1, "results": [{"player_id": "a", "points": 1}]})
        == 409
    )
    assert same(key, [1, 2]) == 400
    assert ScoreEvent.objects.count() == 0


def test_what_the_fast_path_does_not_answer_reaches_django_with_its_body():
    game = make_game()
    key = make_key(game)
    body = match_body([{"player_id": "amy", "points": 1}])
    assert same(key, body, secret="wrong", fast=False) == 401
    assert same(key, body, tamper=json.dumps({**body, "duration_s": 1}).encode(), fast=False) == 401
    assert same(key, b"{not json", fast=False) == 400
    assert same(key, body, query="x=1", fast=False) == 202  # a query string: Django's (signed with it)
    other = make_key(make_game("other"))
    assert same(other, body, fast=False) == 403
    bad_id = asgi_request(FAST, result_path("arena", "not-a-uuid"), method="POST", body=b"{}")
    assert bad_id.status_code == 401  # unsigned: Django's answer
    assert MatchSubmission.objects.count() == 2  # the two with a query string


def test_a_group_stores_each_match_once_and_answers_each_request(monkeypatch):
    game = make_game()
    key = make_key(game)
    groups = []
    answer = fastpath.singles_answer

    def counting(requests):
        groups.append(len(requests))
        return answer(requests)

    monkeypatch.setattr(fastpath, "singles_answer", counting)
    app = FastSingles(_no_django)  # nothing behind it: every answer is the group's
    before = FAST_ANSWERS[SUBMIT]
    twice = uuid.uuid4()
    requests = []
    for i in range(30):
        match_id = twice if i in (3, 17) else uuid.uuid4()
        body = json.dumps(match_body([{"player_id": f"p{i}" if i != 17 else "p3", "points": 10}])).encode()
        path = result_path("arena", match_id)
        headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
        requests.append({"path": path, "method": "POST", "body": body, "headers": list(headers.items())})
    with override_settings(SINGLES_LINGER_MS=50):
        answers = asgi_requests_together(app, requests)
    assert groups == [30]  # one group, one transaction
    assert FAST_ANSWERS[SUBMIT] == before + 30
    statuses = [a.status_code for a in answers]
    assert statuses.count(202) == 29 and statuses[17] == 200  # the second copy: a replay of the first
    assert answers[17].json() == answers[3].json()
    assert ScoreEvent.objects.count() == 29 and MatchSubmission.objects.count() == 29


@pytest.mark.django_db(transaction=True)
def test_a_ledger_that_cannot_be_reached_is_the_same_503_at_once(monkeypatch):
    game = make_game()
    key = make_key(game)
    body = match_body([{"player_id": "amy", "points": 1}])
    saved = dict(connection.settings_dict)
    connection.close()
    connection.close_pool()  # the pool's connections go too: the next one is made from the settings
    connection.settings_dict["PORT"] = "1"
    try:
        started = time.monotonic()
        fast = post(FAST, key, uuid.uuid4(), body)
        took = time.monotonic() - started  # one wait for the pool (DATABASE_POOL_TIMEOUT_S), not two
        # The groups that follow within LEDGER_RETRY_S are answered at once, without a wait.
        started = time.monotonic()
        assert post(FAST, key, uuid.uuid4(), body).status_code == 503
        at_once = time.monotonic() - started
        assert same(key, body) == 503
        unsigned = asgi_request(FAST, result_path("arena", uuid.uuid4()), method="POST", body=b"{}")
    finally:
        connection.close()
        connection.close_pool()
        connection.settings_dict.update(saved)
        monkeypatch.setattr(fastpath, "_ledger_down_until", 0.0)
    assert at_once < 0.2
    assert fast.status_code == 503 and fast.json()["code"] == "ledger_unavailable" and fast["Retry-After"] == "5"
    assert took < 2 * settings.DATABASES["default"]["OPTIONS"]["pool"]["timeout"]
    assert unsigned.status_code == 401  # refused before any key is looked up: Django's, no database
    assert MatchSubmission.objects.count() == 0 and ScoreEvent.objects.count() == 0
