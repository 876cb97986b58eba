"""The judge every submitted result passes through: bans, plausibility rules, per-player buckets."""

from datetime import timedelta

import pytest
from django.utils import timezone

from anticheat.services import (
    ban_record,
    game_rules_set,
    local_buckets_forget,
    results_judge,
    rules_for,
    server_key_spend,
    server_key_throttle,
)
from anticheat.testing import make_key
from common.testing import run_together
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def judge(game, results, *, now=None) -> list[tuple[str, str]]:
    verdicts = results_judge(game=game, rules=rules_for(game=game), results=results, now=now or timezone.now())
    return [(v.status, v.reason) for v in verdicts]


def test_bans_and_hard_rules_reject_soft_rules_hold_for_review():
    game = make_game()
    game_rules_set(game=game, player_burst=0, min_duration_s=60, max_points_per_minute=100)
    ban_record(game=game, player_id="mallory")
    assert judge(game, [("mallory", 1, 600), ("a", 900, 540), ("b", 901, 540), ("c", 1, 30)]) == [
        ("rejected", "banned"),
        ("accepted", ""),  # 9 minutes: at most 900 points
        ("pending_review", "points_per_minute"),
        ("rejected", "implausible"),
    ]


def test_a_players_burst_beyond_the_bucket_goes_to_review_and_refills_with_time():
    game = make_game()  # the shipped defaults: 5 at once, then one a minute
    now = timezone.now()
    burst = judge(game, [("amy", 1, 600)] * 7 + [("bob", 1, 600)], now=now)
    assert burst == [("accepted", "")] * 5 + [("pending_review", "rate")] * 2 + [("accepted", "")]
    later = judge(game, [("amy", 1, 600)] * 2, now=now + timedelta(seconds=61))
    assert later == [("accepted", ""), ("pending_review", "rate")]


def test_rules_come_first_and_spend_no_tokens():
    game = make_game()
    game_rules_set(game=game, min_duration_s=60)
    assert judge(game, [("amy", 1, 10)] * 10) == [("rejected", "implausible")] * 10
    assert judge(game, [("amy", 1, 600)] * 5) == [("accepted", "")] * 5


def test_while_redis_is_down_each_process_holds_the_buckets_itself(settings):
    game = make_game()
    game_rules_set(game=game, max_matches_per_hour=6, player_burst=5, key_rate_per_s=1, key_burst=3)
    key = make_key(game)
    rules = rules_for(game=game)
    local_buckets_forget()
    redis_url, settings.REDIS_URL = settings.REDIS_URL, "redis://127.0.0.1:1/0"
    now = timezone.now()
    # The same limits as in Redis, spent in this process's memory: bounded, never wide open.
    assert judge(game, [("amy", 1, 600)] * 7 + [("bob", 1, 600)], now=now) == [("accepted", "")] * 5 + [
        ("pending_review", "rate"),
        ("pending_review", "matches_per_hour"),
        ("accepted", ""),
    ]
    assert [server_key_throttle(key=key, rules=rules, now=now) for _ in range(4)] == [None, None, None, 1]
    assert server_key_spend(key=key, rules=rules, wanted=2, now=now + timedelta(seconds=1)) == 1
    # Redis back: its buckets decide again (full, as this game never spent them there).
    settings.REDIS_URL = redis_url
    assert judge(game, [("amy", 1, 600)] * 5) == [("accepted", "")] * 5


@pytest.mark.django_db(transaction=True)
def test_eight_concurrent_judges_grant_exactly_the_bucket():
    game = make_game()
    game_rules_set(game=game, player_burst=5, player_refill_s=3600)
    answers: list[tuple[str, str]] = []

    def send(_: int) -> None:
        for _ in range(3):
            answers.extend(judge(game, [("amy", 1, 600)]))

    run_together(send, 8)
    assert answers.count(("accepted", "")) == 5 and answers.count(("pending_review", "rate")) == 19


def test_both_buckets_in_one_call_hourly_first_then_the_burst():
    game = make_game()
    game_rules_set(game=game, max_matches_per_hour=3, player_burst=2, player_refill_s=3600)
    now = timezone.now()
    assert judge(game, [("amy", 1, 600)] * 5 + [("bob", 1, 600)], now=now) == [
        ("accepted", ""),
        ("accepted", ""),
        ("pending_review", "rate"),  # passed the hour's 3, not the burst of 2
        ("pending_review", "matches_per_hour"),
        ("pending_review", "matches_per_hour"),
        ("accepted", ""),
    ]
    # The hour is spent; with the hourly rule off, the (refilled) burst bucket alone decides.
    assert judge(game, [("amy", 1, 600)], now=now + timedelta(seconds=1)) == [("pending_review", "matches_per_hour")]
    game_rules_set(game=game, max_matches_per_hour=0)
    assert judge(game, [("amy", 1, 600)] * 3, now=now + timedelta(hours=2)) == [("accepted", "")] * 2 + [
        ("pending_review", "rate")
    ]
