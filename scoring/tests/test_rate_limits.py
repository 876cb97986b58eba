"""Anti-cheat at the submission seam: a player's burst is quarantined (not refused), a key's
excess is a 429 that stores nothing, plausibility rules reject or hold results."""

import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from anticheat.models import GameRules
from common.testing import run_together
from scoring.models import MatchSubmission, ScoreEvent
from scoring.testing import drain, make_game, make_key, match_body, result_path, signed_post, submit_direct

pytestmark = pytest.mark.django_db


def test_a_players_burst_past_the_default_bucket_is_quarantined_not_refused(client):
    game = make_game(rate_limits=True)
    key = make_key(game)
    now = timezone.now()
    statuses = []
    for i in range(7):
        outcome = submit_direct(
            game, key, match_body([{"player_id": "amy", "points": 10}]), now=now + timedelta(seconds=i)
        )
        assert outcome.http_status == 202
        statuses.append(outcome.body["results"][0])
    assert [s["status"] for s in statuses] == ["accepted"] * 5 + ["pending_review"] * 2
    assert statuses[5]["reason"] == "rate"
    assert ScoreEvent.objects.filter(status="pending_review", reason="rate").count() == 2
    drain()
    assert client.get("/api/v1/games/arena/boards/all/players/amy").json()["score"] == 50  # pending is not ranked
    # One token a minute: a minute later one more result is accepted, the next is held again.
    later = now + timedelta(seconds=66)
    more = [
        submit_direct(game, key, match_body([{"player_id": "amy", "points": 1}]), now=later).body["results"][0][
            "status"
        ]
        for _ in range(2)
    ]
    assert more == ["accepted", "pending_review"]


def test_buckets_count_every_result_of_a_batch_and_other_players_are_unaffected():
    game = make_game(rate_limits=True)
    key = make_key(game)
    body = match_body([{"player_id": "amy", "points": 1}, {"player_id": "bob", "points": 1}])
    now = timezone.now()
    answers = [submit_direct(game, key, body, now=now).body["results"] for _ in range(6)]
    assert [a[0]["status"] for a in answers] == ["accepted"] * 5 + ["pending_review"]
    assert [a[1]["status"] for a in answers] == ["accepted"] * 5 + ["pending_review"]
    GameRules.objects.update_or_create(game=game, defaults={"player_burst": 0})  # 0 switches the rule off
    assert submit_direct(game, key, body, now=now).body["results"][0]["status"] == "accepted"


def test_a_replay_spends_no_tokens():
    game = make_game(rate_limits=True)
    key = make_key(game)
    match_id = uuid.uuid4()
    body = match_body([{"player_id": "amy", "points": 1}])
    now = timezone.now()
    for _ in range(10):
        submit_direct(game, key, body, now=now, match_id=match_id)
    fresh = [submit_direct(game, key, body, now=now).body["results"][0]["status"] for _ in range(5)]
    assert fresh == ["accepted"] * 4 + ["pending_review"]


def test_over_the_keys_rate_is_429_with_retry_after_and_nothing_stored(client):
    game = make_game()
    GameRules.objects.filter(game=game).update(key_rate_per_s=1, key_burst=2)
    key = make_key(game)
    responses = [
        signed_post(client, key, result_path(game, uuid.uuid4()), match_body([{"player_id": f"p{i}", "points": 1}]))
        for i in range(3)
    ]
    assert [r.status_code for r in responses] == [202, 202, 429]
    throttled = responses[2]
    assert throttled.json()["code"] == "throttled"
    assert throttled["Retry-After"].isdigit() and int(throttled["Retry-After"]) >= 1
    assert MatchSubmission.objects.count() == 2 and ScoreEvent.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_senders_get_exactly_the_bucket_and_no_more():
    game = make_game()
    GameRules.objects.filter(game=game).update(key_rate_per_s=1, key_burst=10)
    key = make_key(game)
    statuses: list[int] = []

    def send(n: int) -> None:
        for i in range(5):
            path = result_path(game, uuid.uuid4())
            statuses.append(
                signed_post(Client(), key, path, match_body([{"player_id": f"s{n}x{i}", "points": 1}])).status_code
            )

    run_together(send, 8)
    # 40 requests within a few seconds: the burst of 10 plus at most one refill per elapsed second.
    accepted = statuses.count(202)
    assert statuses.count(429) == 40 - accepted
    assert 10 <= accepted <= 10 + 5
    assert MatchSubmission.objects.count() == accepted


def test_plausibility_rules_reject_hard_and_quarantine_soft_violations():
    game = make_game()
    GameRules.objects.filter(game=game).update(min_duration_s=60, max_points_per_minute=100)
    key = make_key(game)
    body = match_body([{"player_id": "a", "points": 900}, {"player_id": "b", "points": 800}])
    body["duration_s"] = 540  # 9 minutes: at most 900 points
    assert [r["status"] for r in submit_direct(game, key, body, now=timezone.now()).body["results"]] == [
        "accepted",
        "accepted",
    ]
    body = match_body([{"player_id": "a", "points": 901}])
    body["duration_s"] = 540
    assert submit_direct(game, key, body, now=timezone.now()).body["results"][0] == {
        "player_id": "a",
        "status": "pending_review",
        "reason": "points_per_minute",
    }
    body = match_body([{"player_id": "a", "points": 1}])
    body["duration_s"] = 30
    assert submit_direct(game, key, body, now=timezone.now()).body["results"][0] == {
        "player_id": "a",
        "status": "rejected",
        "reason": "implausible",
    }


def test_matches_per_hour_beyond_the_rule_go_to_review():
    game = make_game()
    GameRules.objects.filter(game=game).update(max_matches_per_hour=3)
    key = make_key(game)
    now = timezone.now()
    statuses = [
        submit_direct(game, key, match_body([{"player_id": "amy", "points": 1}]), now=now).body["results"][0]
        for _ in range(4)
    ]
    assert [s["status"] for s in statuses] == ["accepted"] * 3 + ["pending_review"]
    assert statuses[3]["reason"] == "matches_per_hour"
    later = now + timedelta(minutes=21)  # a third of an hour: one more match
    assert (
        submit_direct(game, key, match_body([{"player_id": "amy", "points": 1}]), now=later).body["results"][0][
            "status"
        ]
        == "accepted"
    )
