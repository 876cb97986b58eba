"""A period freezes once with two beat schedulers and two workers running (docs/api.md, "Finality"):
real Celery processes, each beat sending the freeze every second."""

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from common.testing import start_beat, start_worker, stop
from competitions.models import TournamentPeriod, TournamentStanding
from events.models import Event
from events.types import TOURNAMENT_PERIOD_FINAL
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_tournament_results import cup

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True)]
FAST_FREEZE = {"TOURNAMENT_FREEZE_DELAY_S": "0", "TOURNAMENT_FREEZE_INTERVAL_S": "1"}


def test_two_beat_schedulers_and_two_workers_freeze_a_period_once():
    game = make_game()
    key = make_key(game)
    start = timezone.now().replace(microsecond=0) - timedelta(seconds=56)
    rewards = [{"rank_from": 1, "rank_to": 2, "reward": {"gems": 5}}]
    cup(game, starts_at=start, ends_at=None, duration_s=60, grace_s=0, rewards=rewards)  # closes in ~4 s
    for player, points in [("maya", 9), ("leo", 7), ("zed", 1)]:
        body = match_body([{"player_id": player, "points": points}], tournaments=["cup"])
        assert submit_direct(game, key, body, now=timezone.now()).body["results"][0]["tournaments"]["cup"] == "counted"
    drain()
    processes = [start_beat(**FAST_FREEZE), start_beat(**FAST_FREEZE)]
    processes += [start_worker(**FAST_FREEZE), start_worker(**FAST_FREEZE)]
    try:
        deadline = time.monotonic() + 60
        while not TournamentPeriod.objects.exists():
            assert time.monotonic() < deadline, "no freeze within 60 s"
            time.sleep(0.2)
        time.sleep(5)  # ten more freeze ticks from the two beats
    finally:
        for proc in processes:
            stop(proc)
    assert TournamentPeriod.objects.count() == 1
    assert TournamentStanding.objects.count() == 3
    [event] = Event.objects.filter(type=TOURNAMENT_PERIOD_FINAL)
    assert [(r["player_id"], r["rank"]) for r in json.loads(event.data)["rewards"]] == [("maya", 1), ("leo", 2)]
