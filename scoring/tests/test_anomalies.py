"""The anomaly job: results far above the cohort go to review and off the boards, exactly."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from anticheat.services import AnomalyPolicy
from scoring.models import ScoreEvent
from scoring.moderation import anomalies_review, results_approve
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db

SMALL = AnomalyPolicy(quantile=0.999, min_cohort=1000)  # the default needs 10,000 results


def test_an_outlier_is_withheld_then_a_moderator_clears_it_for_good(client):
    game = make_game()
    key = make_key(game)
    now = timezone.now()
    for i in range(1200):  # the cohort: 10-59 points a match
        submit_direct(game, key, match_body([{"player_id": f"p{i % 300}", "points": 10 + i % 50}]), now=now)
    submit_direct(game, key, match_body([{"player_id": "p7", "points": 9000}]), now=now)
    drain()
    assert client.get("/api/v1/games/arena/boards/best/players/p7").json()["score"] == 9000
    withheld, released = anomalies_review(game=game, now=timezone.now(), policy=SMALL)
    assert (withheld, released) == (1, 0)
    outlier = ScoreEvent.objects.get(points=9000)
    assert (outlier.status, outlier.reason) == ("pending_review", "anomaly")
    assert client.get("/api/v1/games/arena/boards/best/players/p7").json()["score"] < 9000  # taken off exactly
    assert boards_diff(game=game, now=timezone.now()) == {}
    moderator = User.objects.create_superuser("mod", password="pw")
    results_approve(event_ids=[outlier.id], reason="verified replay", actor=moderator)
    drain()
    assert client.get("/api/v1/games/arena/boards/best/players/p7").json()["score"] == 9000
    assert anomalies_review(game=game, now=timezone.now(), policy=SMALL) == (
        0,
        0,
    )  # cleared: not again


def test_small_cohorts_are_left_alone():
    game = make_game()
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "a", "points": 9000}]), now=timezone.now())
    assert anomalies_review(game=game, now=timezone.now()) == (0, 0)


def test_between_full_passes_only_new_results_are_checked_against_the_last_limit():
    game = make_game()
    key = make_key(game)
    now = timezone.now()
    for i in range(1200):
        submit_direct(game, key, match_body([{"player_id": f"p{i % 300}", "points": 10 + i % 50}]), now=now)
    assert anomalies_review(game=game, now=now, policy=SMALL) == (0, 0)  # a full pass: the limit is set
    submit_direct(game, key, match_body([{"player_id": "p9", "points": 9000}]), now=now)
    later = now + timedelta(seconds=60)
    assert anomalies_review(game=game, now=later, policy=SMALL) == (1, 0)  # checked by id, not recomputed
    outlier = ScoreEvent.objects.get(points=9000)
    assert (outlier.status, outlier.reason) == ("pending_review", "anomaly")
    assert anomalies_review(game=game, now=later + timedelta(seconds=60), policy=SMALL) == (0, 0)
