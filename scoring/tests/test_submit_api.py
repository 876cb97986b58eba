"""Contract tests of the signed submission API (docs/api.md): every status, code and body."""

import json
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from anticheat.services import server_key_revoke
from common.testing import run_together
from scoring.models import MatchSubmission, ScoreEvent
from scoring.testing import drain, make_game, make_key, match_body, result_path, signed_post

pytestmark = pytest.mark.django_db


def stored() -> tuple[int, int]:
    return MatchSubmission.objects.count(), ScoreEvent.objects.count()


def test_accepted_result_is_stored_then_ranked(client):
    game = make_game()
    key = make_key(game)
    match_id = uuid.uuid4()
    body = match_body(
        [
            {"player_id": "maya", "points": 50, "display_name": "Maya", "region": "eu"},
            {"player_id": "leo", "points": 20},
        ]
    )
    response = signed_post(client, key, result_path(game, match_id), body)
    assert response.status_code == 202
    assert response.json() == {
        "match_id": str(match_id),
        "results": [{"player_id": "maya", "status": "accepted"}, {"player_id": "leo", "status": "accepted"}],
    }
    assert "Idempotent-Replayed" not in response.headers
    assert stored() == (1, 2)
    assert drain() == 2
    top = client.get("/api/v1/games/arena/boards/all/top").json()
    assert [(e["rank"], e["player_id"], e["score"], e["display_name"]) for e in top["entries"]] == [
        (1, "maya", 50, "Maya"),
        (2, "leo", 20, None),
    ]
    eu = client.get("/api/v1/games/arena/boards/all/top?region=eu").json()
    assert [e["player_id"] for e in eu["entries"]] == ["maya"]


def test_body_tampered_after_signing_is_401_and_stores_nothing(client):
    game = make_game()
    key = make_key(game)
    body = json.dumps(match_body([{"player_id": "maya", "points": 50}]))
    response = signed_post(client, key, result_path(game, uuid.uuid4()), body, tamper=body.replace("50", "99").encode())
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"
    assert stored() == (0, 0)


def early_in_a_second() -> None:
    """Whole-second timestamps: start right after a second ticks, so no tick falls between
    signing and checking (which would make 301 s look like 300 s)."""
    while time.time() % 1 > 0.5:
        time.sleep(0.05)


@pytest.mark.parametrize("skew", [301, -301])
def test_timestamp_301_s_off_is_401(client, skew):
    game = make_game()
    key = make_key(game)
    early_in_a_second()
    response = signed_post(
        client,
        key,
        result_path(game, uuid.uuid4()),
        match_body([{"player_id": "a", "points": 1}]),
        timestamp=int(time.time()) + skew,
    )
    assert response.status_code == 401
    assert set(response.json()) == {"detail", "code"}
    assert stored() == (0, 0)


@pytest.mark.parametrize("skew", [300, -300, 290])
def test_timestamp_within_the_window_is_accepted(client, skew):
    game = make_game()
    key = make_key(game)
    early_in_a_second()
    response = signed_post(
        client,
        key,
        result_path(game, uuid.uuid4()),
        match_body([{"player_id": "a", "points": 1}]),
        timestamp=int(time.time()) + skew,
    )
    assert response.status_code == 202


def test_missing_headers_unknown_and_revoked_keys_and_wrong_secret_are_401(client):
    game = make_game()
    key = make_key(game)
    path = result_path(game, uuid.uuid4())
    body = json.dumps(match_body([{"player_id": "a", "points": 1}]))
    response = client.post(path, data=body, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert signed_post(client, key, path, body, secret="not-the-secret").status_code == 401
    key.key_id = "lbk_unknown"
    assert signed_post(client, key, path, body).status_code == 401
    key.refresh_from_db()
    server_key_revoke(key_id=key.key_id)
    assert signed_post(client, key, path, body).status_code == 401
    assert stored() == (0, 0)


def test_key_of_another_game_is_403(client):
    game = make_game()
    other = make_game("other")
    key = make_key(other)
    response = signed_post(client, key, result_path(game, uuid.uuid4()), match_body([{"player_id": "a", "points": 1}]))
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert stored() == (0, 0)


def test_malformed_json_is_400_parse_error(client):
    game = make_game()
    key = make_key(game)
    response = signed_post(client, key, result_path(game, uuid.uuid4()), b'{"played_at": ')
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    assert stored() == (0, 0)


@pytest.mark.parametrize(
    ("result", "field"),
    [
        ({"player_id": "a", "points": 10_001}, "points"),
        ({"player_id": "a", "points": -1}, "points"),
        ({"player_id": "a", "points": "10"}, "points"),
        ({"player_id": "a", "points": 10.0}, "points"),
        ({"player_id": "a", "points": True}, "points"),
        ({"player_id": "a", "points": None}, "points"),
        ({"player_id": "a"}, "points"),
        ({"player_id": 7, "points": 1}, "player_id"),
        ({"player_id": "bad id!", "points": 1}, "player_id"),
        ({"player_id": "x" * 65, "points": 1}, "player_id"),
        ({"player_id": "a", "points": 1, "region": "EU"}, "region"),
    ],
)
def test_wrongly_typed_or_out_of_range_results_are_400_with_field_errors(client, result, field):
    game = make_game()
    key = make_key(game)
    response = signed_post(client, key, result_path(game, uuid.uuid4()), match_body([result]))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert field in body["results"][0]
    assert stored() == (0, 0)


def test_duplicate_player_ids_and_bad_match_fields_are_400(client):
    game = make_game()
    key = make_key(game)
    dup = signed_post(
        client,
        key,
        result_path(game, uuid.uuid4()),
        match_body([{"player_id": "a", "points": 1}, {"player_id": "a", "points": 2}]),
    )
    assert dup.status_code == 400
    assert "results" in dup.json()
    cases = [
        ({"played_at": "yesterday", "duration_s": 1, "results": [{"player_id": "a", "points": 1}]}, "played_at"),
        (
            {"played_at": "2026-10-13T20:14:07", "duration_s": 1, "results": [{"player_id": "a", "points": 1}]},
            "played_at",
        ),
        (match_body([{"player_id": "a", "points": 1}], played_at=timezone.now() + timedelta(seconds=90)), "played_at"),
        ({"played_at": "2026-10-13T20:14:07Z", "results": [{"player_id": "a", "points": 1}]}, "duration_s"),
        (match_body([]), "results"),
        (match_body([{"player_id": f"p{i}", "points": 1} for i in range(101)]), "results"),
    ]
    for body, field in cases:
        response = signed_post(client, key, result_path(game, uuid.uuid4()), body)
        assert response.status_code == 400, body
        assert field in response.json(), (field, response.json())
    bad_id = signed_post(client, key, result_path(game, "not-a-uuid"), match_body([{"player_id": "a", "points": 1}]))
    assert bad_id.status_code == 400
    assert stored() == (0, 0)


def test_result_outside_every_open_season_is_409_season_closed(client):
    game = make_game(start=timezone.now() - timedelta(days=1))
    key = make_key(game)
    before_first = match_body([{"player_id": "a", "points": 1}], played_at=timezone.now() - timedelta(days=3))
    response = signed_post(client, key, result_path(game, uuid.uuid4()), before_first)
    assert response.status_code == 409
    assert response.json()["code"] == "season_closed"
    assert stored() == (0, 0)


def test_season_past_its_grace_window_is_closed(client):
    start = timezone.now() - timedelta(days=10)
    game = make_game(start=start, days=5)
    key = make_key(game)
    played = match_body([{"player_id": "a", "points": 1}], played_at=start + timedelta(days=1))
    response = signed_post(client, key, result_path(game, uuid.uuid4()), played)
    assert response.status_code == 409
    assert response.json()["code"] == "season_closed"


def test_same_match_twice_replays_the_first_answer_and_counts_once(client):
    game = make_game()
    key = make_key(game)
    path = result_path(game, uuid.uuid4())
    body = match_body([{"player_id": "maya", "points": 50}, {"player_id": "leo", "points": 20}])
    first = signed_post(client, key, path, body)
    # Same content, other key order and result order: the same match.
    reordered = {"results": list(reversed(body["results"])), "duration_s": 540, "played_at": body["played_at"]}
    second = signed_post(client, key, path, json.dumps(reordered, indent=2))
    assert first.status_code == 202
    assert second.status_code == 200
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    assert stored() == (1, 2)
    drain()
    signed_post(client, key, path, body)
    drain()
    assert client.get("/api/v1/games/arena/boards/all/players/maya").json()["score"] == 50


def test_same_match_id_with_a_different_body_is_409_and_changes_nothing(client):
    game = make_game()
    key = make_key(game)
    path = result_path(game, uuid.uuid4())
    signed_post(client, key, path, match_body([{"player_id": "maya", "points": 50}]))
    conflict = signed_post(client, key, path, match_body([{"player_id": "maya", "points": 51}]))
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "idempotency_conflict"
    assert list(ScoreEvent.objects.values_list("points", flat=True)) == [50]


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_identical_submissions_count_once():
    game = make_game()
    key = make_key(game)
    path = result_path(game, uuid.uuid4())
    body = json.dumps(match_body([{"player_id": "maya", "points": 50}, {"player_id": "leo", "points": 20}]))
    statuses: list[int] = []
    replayed: list[str | None] = []

    def send(_: int) -> None:
        response = signed_post(Client(), key, path, body)
        statuses.append(response.status_code)
        replayed.append(response.headers.get("Idempotent-Replayed"))

    run_together(send, 20)
    assert sorted(statuses) == [200] * 19 + [202]
    assert replayed.count("true") == 19
    assert stored() == (1, 2)
    drain()
    assert Client().get("/api/v1/games/arena/boards/all/players/maya").json()["score"] == 50


def test_batch_answers_each_match_in_order_and_one_bad_match_sinks_nothing(client):
    game = make_game()
    key = make_key(game)
    played = timezone.now() - timedelta(minutes=1)
    replayed_id = uuid.uuid4()
    signed_post(client, key, result_path(game, replayed_id), match_body([{"player_id": "a", "points": 5}], played))
    good = {"match_id": str(uuid.uuid4()), **match_body([{"player_id": "b", "points": 7}], played)}
    bad = {"match_id": str(uuid.uuid4()), **match_body([{"player_id": "c", "points": "7"}], played)}
    replay = {"match_id": str(replayed_id), **match_body([{"player_id": "a", "points": 5}], played)}
    conflict = {"match_id": str(replayed_id), **match_body([{"player_id": "a", "points": 6}], played)}
    closed = {
        "match_id": str(uuid.uuid4()),
        **match_body([{"player_id": "d", "points": 1}], played_at=timezone.now() - timedelta(days=30)),
    }
    no_id = match_body([{"player_id": "e", "points": 1}], played)
    response = signed_post(
        client, key, "/api/v1/games/arena/matches/batch", {"matches": [good, bad, replay, conflict, closed, no_id]}
    )
    assert response.status_code == 200
    answers = response.json()["matches"]
    assert [a["http_status"] for a in answers] == [202, 400, 200, 409, 409, 400]
    assert answers[0]["results"] == [{"player_id": "b", "status": "accepted"}]
    assert answers[1]["code"] == "invalid" and "results" in answers[1]
    assert answers[2]["match_id"] == str(replayed_id) and answers[2]["results"][0]["player_id"] == "a"
    assert answers[3]["code"] == "idempotency_conflict"
    assert answers[4]["code"] == "season_closed"
    assert set(ScoreEvent.objects.values_list("player_id", flat=True)) == {"a", "b"}


def test_a_match_sent_alone_then_in_a_batch_is_a_replay(client):
    game = make_game()
    key = make_key(game)
    match_id = uuid.uuid4()
    body = match_body([{"player_id": "a", "points": 5}])
    first = signed_post(client, key, result_path(game, match_id), body)
    batch = signed_post(
        client,
        key,
        "/api/v1/games/arena/matches/batch",
        {"matches": [{"match_id": str(match_id), **body}, {"match_id": str(match_id), **body}]},
    )
    answers = batch.json()["matches"]
    assert [a["http_status"] for a in answers] == [200, 200]
    assert {k: v for k, v in answers[0].items() if k != "http_status"} == first.json()
    assert ScoreEvent.objects.count() == 1


def test_batch_envelope_errors_are_400(client):
    game = make_game()
    key = make_key(game)
    path = "/api/v1/games/arena/matches/batch"
    assert signed_post(client, key, path, {"matches": []}).status_code == 400
    assert signed_post(client, key, path, {"nope": 1}).status_code == 400
    too_many = {"matches": [{"match_id": str(uuid.uuid4()), **match_body([{"player_id": "a", "points": 1}])}] * 1001}
    assert signed_post(client, key, path, too_many).status_code == 400
    assert stored() == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_ledger_unavailable_is_503_and_nothing_is_stored(client):
    game = make_game()
    key = make_key(game)
    body = match_body([{"player_id": "a", "points": 1}])
    path = result_path(game, uuid.uuid4())
    saved = dict(connection.settings_dict)
    connection.close()
    connection.close_pool()  # the pool's connections go too: the next one is made from the settings
    connection.settings_dict["PORT"] = "1"
    try:
        response = signed_post(client, key, path, body)
    finally:
        connection.close()
        connection.close_pool()
        connection.settings_dict.update(saved)
    assert response.status_code == 503
    assert response.json()["code"] == "ledger_unavailable"
    assert stored() == (0, 0)
