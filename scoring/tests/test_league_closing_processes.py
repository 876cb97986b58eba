"""A league period's end with real Celery processes (docs/api.md, "Leagues", period end): once with
two beat schedulers and two workers, each beat sending the end every second; and a worker SIGKILLed
inside a chunk's transaction, the end resumed by the next worker where it stopped."""

import json
import os
import signal
import time
from pathlib import Path

import pytest

from common.testing import start_beat, start_worker, stop
from competitions.league_models import LeagueCohort, LeaguePeriod, LeagueStanding
from scoring.tests.test_league_closing import _league_with_cohorts, cohort_events

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True)]
FAST_END = {"TOURNAMENT_FREEZE_DELAY_S": "0", "TOURNAMENT_FREEZE_INTERVAL_S": "1"}


def wait_for(what, check, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(0.2)


def period_one_final() -> bool:
    return LeaguePeriod.objects.filter(index=1, state="final").exists()


def period_one_events():
    return [e for e in cohort_events() if e["period"] == 1]


def test_two_beat_schedulers_and_two_workers_end_a_league_period_once():
    league = _league_with_cohorts()  # period 1 (three hours ago) is due: 14 cohorts, 40 players
    processes = [start_beat(**FAST_END), start_beat(**FAST_END), start_worker(**FAST_END), start_worker(**FAST_END)]
    try:
        wait_for("the end of period 1", period_one_final)
        time.sleep(5)  # ten more ticks from the two beats
    finally:
        for proc in processes:
            stop(proc)
    cohorts = LeagueCohort.objects.filter(league=league, period=1)
    assert cohorts.count() == 14 and not cohorts.filter(final_at__isnull=True).exists()
    events = period_one_events()
    assert len(events) == 14 and len({e["cohort"] for e in events}) == 14
    assert LeagueStanding.objects.filter(period=1).count() == 40
    assert LeaguePeriod.objects.filter(index=1).count() == 1


def test_a_worker_killed_inside_a_chunk_is_resumed_by_the_next_one(tmp_path: Path):
    league = _league_with_cohorts()
    held = tmp_path / "held.json"
    beat = start_beat(**FAST_END)
    worker = start_worker(
        "--include", "leaderboard_site.tests.close_hold", "--concurrency", "1", CLOSE_HOLD_DIR=str(tmp_path), **FAST_END
    )
    try:
        wait_for("the worker holding the fourth chunk", held.exists)
        os.kill(json.loads(held.read_text())["pid"], signal.SIGKILL)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        # Three chunks of two committed; the fourth's writes went with its transaction.
        assert LeagueCohort.objects.filter(league=league, period=1, final_at__isnull=False).count() == 6
        assert len(period_one_events()) == 6
        assert LeagueStanding.objects.filter(period=1).count() == sum(
            c.players for c in LeagueCohort.objects.filter(league=league, period=1, final_at__isnull=False)
        )
        assert LeaguePeriod.objects.get(index=1).state == "closing"
        worker = start_worker(**FAST_END)
        wait_for("the end resumed", period_one_final)
    finally:
        stop(worker)
        stop(beat)
    events = period_one_events()
    assert len(events) == 14 and len({e["cohort"] for e in events}) == 14
    assert LeagueStanding.objects.filter(period=1).count() == 40
