"""End to end with real processes: Celery worker and beat, SIGKILLed mid-load, then drained.

10,000 results (20% of the matches resent, and some tasks enqueued twice), the worker killed
with SIGKILL twice while it works; after the queue drains every board equals the ledger member by
member. Then FLUSHALL + rebuild_boards restores every board, and new results still reach the
boards with no worker restart (the nameless exchange survives the flush, kombu #1063).
"""

import os
import random
import subprocess
import sys
import time
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from boards.keys import BoardRef
from boards.staging import game_paused
from common.redis import client as redis_client
from common.testing import ROOT, kill_hard, process_env, start_beat, start_worker, stop
from scoring.models import ScoreEvent
from scoring.selectors import boards_diff
from scoring.services import apply_flush, enqueue_apply, matches_submit
from scoring.tasks import queue_backlog
from scoring.testing import make_game, make_key, match_body
from scoring.testing import unapplied as outbox_unapplied
from scoring.validation import validate_match

pytestmark = [pytest.mark.serial, pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


def unapplied() -> int:
    return outbox_unapplied().count()


def wait_drained(timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if unapplied() == 0:
            return
        time.sleep(0.25)
    raise AssertionError(f"{unapplied()} events still unapplied after {timeout} s")


def make_matches(rng: random.Random, count: int, played_from):
    matches = []
    for _ in range(count):
        players = rng.sample(range(3000), 2)
        results = [
            {"player_id": f"p{p}", "points": rng.randint(0, 1000), "region": ["eu", "na", "sa"][p % 3]} for p in players
        ]
        played = played_from + timedelta(seconds=rng.randint(0, 3 * 86400))
        matches.append((uuid.uuid4(), match_body(results, played)))
    return matches


def submit(game, key, batch):
    now = timezone.now()
    parsed = []
    for match_id, body in batch:
        match, errors = validate_match(
            body, match_id=match_id, max_points=game.max_points_per_match, now=now, max_future_s=60
        )
        parsed.append((match_id, match, errors))
    return matches_submit(game=game, key=key, matches=parsed, now=now)


def test_sigkilled_worker_loses_nothing_and_counts_nothing_twice():
    rng = random.Random(42)
    game = make_game("load", start=timezone.now() - timedelta(days=5))
    key = make_key(game)
    matches = make_matches(rng, 5000, timezone.now() - timedelta(days=4))  # 10,000 results
    resent = rng.sample(matches, len(matches) // 5)
    stream = matches + resent
    rng.shuffle(stream)  # a resend may come before its first copy has been applied

    beat = start_beat()
    worker = start_worker()
    kills = 0
    try:
        statuses: list[int] = []
        for i in range(0, len(stream), 100):
            statuses += [o.http_status for o in submit(game, key, stream[i : i + 100])]
            if i in (1500, 3500):
                time.sleep(0.3)  # let it get busy, then kill it mid-batch
                kill_hard(worker)
                kills += 1
                worker = start_worker()
            if i % 1000 == 0:  # duplicate deliveries of whole tasks
                enqueue_apply(list(ScoreEvent.objects.order_by("-id").values_list("id", flat=True)[:300]))
        assert kills == 2
        assert statuses.count(202) == 5000 and statuses.count(200) == len(resent)
        assert ScoreEvent.objects.count() == 10_000
        wait_drained()
        assert boards_diff(game=game, now=timezone.now()) == {}

        # Redis loses everything; the ledger brings the boards back exactly.
        redis_client().flushall()
        call_command("rebuild_boards", "load", "--quiet", stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))
        assert boards_diff(game=game, now=timezone.now()) == {}

        # After the flush, new results still reach the boards without restarting the worker.
        fresh = make_matches(rng, 50, timezone.now() - timedelta(days=1))
        submit(game, key, fresh)
        wait_drained(60)
        assert boards_diff(game=game, now=timezone.now()) == {}
    finally:
        stop(worker)
        stop(beat)


def test_rebuild_while_results_stream_in_loses_nothing(tmp_path):
    rng = random.Random(7)
    game = make_game("live", tie_rule="dense", start=timezone.now() - timedelta(days=5))
    key = make_key(game)
    worker = start_worker()
    beat = start_beat()
    try:
        submit(game, key, make_matches(rng, 1500, timezone.now() - timedelta(days=4)))
        stop_file = tmp_path / "stop"
        feeder = subprocess.Popen(
            [sys.executable, "-c", FEEDER, str(key.key_id), str(stop_file)],
            cwd=ROOT,
            env=process_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while ScoreEvent.objects.count() < 3100 and time.monotonic() < deadline:
            time.sleep(0.05)  # the feeder is submitting: rebuild now, while it goes on
        call_command("rebuild_boards", "live", "--quiet", stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))
        during = ScoreEvent.objects.count()
        deadline = time.monotonic() + 30
        while ScoreEvent.objects.count() <= during and time.monotonic() < deadline:
            time.sleep(0.05)
        stop_file.touch()  # the feeder stops only once results have arrived after the swap
        assert feeder.wait(timeout=120) == 0, feeder.stderr.read() if feeder.stderr else ""
        assert ScoreEvent.objects.count() > during  # results kept arriving after the swap
        wait_drained()
        assert boards_diff(game=game, now=timezone.now()) == {}
    finally:
        (tmp_path / "stop").touch()
        stop(worker)
        stop(beat)


# Submits batches of 25 matches from another process while the rebuild runs, until told to stop
# (a file appears) or 2,000 batches have gone.
FEEDER = """
import os, sys, random, uuid, django
from datetime import timedelta
django.setup()
from django.utils import timezone
from anticheat.models import ServerKey
from scoring.tests.test_worker_integration import make_matches, submit
key = ServerKey.objects.select_related("game").get(key_id=sys.argv[1])
rng = random.Random(99)
for _ in range(2000):
    if os.path.exists(sys.argv[2]):
        break
    submit(key.game, key, make_matches(rng, 25, timezone.now() - timedelta(days=2)))
"""


def test_a_batch_that_finds_its_game_paused_is_applied_once_the_pause_ends_without_the_relay():
    """A rebuild pauses its game's applies while it swaps the boards in; the apply task sends such
    a batch a moment later (scoring/tasks.py, Celery's retry) rather than leaving it to the relay, seconds
    later. No beat here, so no relay at all: only the task's own retry can apply it."""
    game = make_game("paused", start=timezone.now() - timedelta(days=1))
    key = make_key(game)
    board = BoardRef(game.slug, game.seasons.get().id, "all").key
    worker = start_worker()
    try:
        submit(game, key, [(uuid.uuid4(), match_body([{"player_id": "warm", "points": 1}]))])
        apply_flush()
        wait_drained(60)  # the worker is up and working the queue
        with game_paused(game.slug, "test"):
            submit(game, key, [(uuid.uuid4(), match_body([{"player_id": "maya", "points": 70}]))])
            apply_flush()
            deadline = time.monotonic() + 10
            while queue_backlog() and time.monotonic() < deadline:  # taken by the worker
                time.sleep(0.05)
            time.sleep(1.0)  # tried, found paused, sent again (and again)
            assert unapplied() == 1
            assert redis_client().zrange(board, 0, -1) == ["warm"]
        wait_drained(10)
        assert redis_client().zrange(board, 0, -1) == ["warm", "maya"]
        assert boards_diff(game=game, now=timezone.now()) == {}
    finally:
        stop(worker)
