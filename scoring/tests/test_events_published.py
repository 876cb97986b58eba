"""What the boards' changes publish (docs/api.md, "Events out"), each in the transaction of the change: a
frozen season its top 100, a moderator's decision a `result.reviewed`, a ban a `player.banned`
whose revocations publish nothing more; the anomaly job's own moves publish nothing."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from anticheat.services import AnomalyPolicy, game_rules_set
from events.models import Delivery, Event
from events.services import webhook_create
from scoring.models import EventStatus, ScoreEvent
from scoring.moderation import anomalies_review, results_approve, results_reinstate, results_revoke
from scoring.testing import drain, make_game, make_key, match_body, signed_get, submit_direct

pytestmark = pytest.mark.django_db


def published(client, key, game: str = "arena") -> list[dict]:
    response = signed_get(client, key, f"/api/v1/games/{game}/events?limit=1000")
    assert response.status_code == 200, response.content
    return response.json()["events"]


def command(*args: str) -> dict:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue())


def test_a_frozen_season_publishes_the_top_100_its_board_answers(client):
    game = make_game("arena", start=timezone.now() - timedelta(days=3))
    key = make_key(game)
    for i in range(130):
        submit_direct(
            game, key, match_body([{"player_id": f"p{i:03d}", "points": 1000 - 5 * (i // 2)}]), now=timezone.now()
        )
    drain()
    ended = command("end_season", "arena", "--grace-s", "0")
    [event] = published(client, key)
    assert event["type"] == "season.frozen" and event["id"] == 1
    assert list(event["data"]) == ["season", "top"] and event["data"]["season"] == ended["season"]
    top = client.get(f"/api/v1/games/arena/boards/all/top?n=100&season={ended['season']}").json()["entries"]
    assert event["data"]["top"] == top and len(top) == 100
    assert top[0] == {"rank": 1, "player_id": "p000", "display_name": None, "score": 1000}
    assert top[1]["rank"] == 1  # ties as the board ranks them (competition)
    command("end_season", "arena", "--grace-s", "0")  # the next season, empty: an empty top
    assert [e["data"]["top"] for e in published(client, key)[1:]] == [[]]


def test_a_season_frozen_twice_publishes_once(client):
    from scoring.freezing import season_freeze

    game = make_game("arena")
    ended = command("end_season", "arena", "--grace-s", "0", "--no-next")
    assert season_freeze(season_id=ended["season"], now=timezone.now()) == 0
    assert Event.objects.filter(game=game).count() == 1


def test_a_ban_publishes_how_many_results_it_revoked_and_no_review_of_them(client):
    game = make_game("arena", start=timezone.now() - timedelta(days=3))
    key = make_key(game)
    webhook_create(game=game, url="http://127.0.0.1:9/hook")
    for points in (5, 6, 7):
        submit_direct(game, key, match_body([{"player_id": "mallory", "points": points}]), now=timezone.now())
    drain()
    since = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert command("ban_player", "arena", "mallory", "--revoke-since", since)["revoked"] == 3
    [event] = published(client, key)
    assert (event["type"], event["data"]) == ("player.banned", {"player_id": "mallory", "revoked": 3})
    assert Delivery.objects.get().event.type == "player.banned"  # the webhook has it to deliver
    command("ban_player", "arena", "eve")
    assert [e["data"] for e in published(client, key)][1:] == [{"player_id": "eve", "revoked": 0}]


def test_a_moderators_approval_revocation_and_reinstatement_each_publish_a_review(client, moderator):
    game = make_game("arena")
    key = make_key(game)
    game_rules_set(game=game, player_burst=1, key_rate_per_s=0)  # a player's second result goes to review
    for points in (10, 20, 30):
        submit_direct(game, key, match_body([{"player_id": "maya", "points": points}]), now=timezone.now())
    held = list(ScoreEvent.objects.filter(status=EventStatus.PENDING_REVIEW).order_by("id"))
    assert len(held) == 2
    results_approve(event_ids=[held[0].id], reason="replay checked", actor=moderator)
    results_revoke(event_ids=[held[1].id], reason="aimbot", actor=moderator)
    results_reinstate(event_ids=[held[1].id], reason="appeal upheld", actor=moderator)
    results_revoke(event_ids=[held[1].id], reason="second look")  # accepted again, so revocable again
    events = published(client, key)
    assert [(e["type"], e["data"]) for e in events] == [
        (
            "result.reviewed",
            {
                "match_id": str(held[0].match_id),
                "player_id": "maya",
                "decision": "approved",
                "reason": "replay checked",
            },
        ),
        (
            "result.reviewed",
            {"match_id": str(held[1].match_id), "player_id": "maya", "decision": "revoked", "reason": "aimbot"},
        ),
        (
            "result.reviewed",
            {"match_id": str(held[1].match_id), "player_id": "maya", "decision": "approved", "reason": "appeal upheld"},
        ),
        (
            "result.reviewed",
            {"match_id": str(held[1].match_id), "player_id": "maya", "decision": "revoked", "reason": "second look"},
        ),
    ]
    assert results_approve(event_ids=[held[0].id], reason="again").changed == 0
    assert len(published(client, key)) == 4  # a decision that changed nothing publishes nothing


def test_the_anomaly_jobs_withholding_and_release_publish_nothing(client):
    game = make_game("arena")
    key = make_key(game)
    policy = AnomalyPolicy(quantile=0.5, min_cohort=10)
    now = timezone.now()
    for i in range(20):
        submit_direct(game, key, match_body([{"player_id": f"p{i}", "points": 10}]), now=now)
    submit_direct(game, key, match_body([{"player_id": "star", "points": 9000}]), now=now)
    assert anomalies_review(game=game, now=now, policy=policy) == (1, 0)
    for i in range(30):  # the cohort catches up: the next full pass releases every one of them
        submit_direct(game, key, match_body([{"player_id": f"q{i}", "points": 9000}]), now=now)
    assert anomalies_review(game=game, now=now + timedelta(seconds=60), policy=policy) == (30, 0)
    assert anomalies_review(game=game, now=now + timedelta(seconds=700), policy=policy) == (0, 31)
    assert published(client, key) == []


def test_results_publish_nothing_and_the_write_path_never_touches_the_events_tables():
    """Why publishing costs ingest nothing (docs/performance.md, "Events out"): accepting, holding
    or rejecting a result and applying it to the boards run no statement on an events table."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    game = make_game("arena")
    key = make_key(game)
    webhook_create(game=game, url="http://127.0.0.1:9/hook")
    game_rules_set(game=game, player_burst=1, key_rate_per_s=0)
    with CaptureQueriesContext(connection) as queries:
        for points in (10, 20):  # the second is held for review (rate)
            submit_direct(game, key, match_body([{"player_id": "maya", "points": points}]), now=timezone.now())
        drain()
    assert len(queries) > 10 and not [q["sql"] for q in queries if "events_" in q["sql"]]
    assert not Event.objects.exists()
