"""Redis comes back empty under a running service: the boards marker is gone, the beat notices, and
every game's live boards come back from the ledger with nobody running a command (recovery.py).

The marker is written only while the recovery's lock is ours, so a flush during a recovery
starts it over instead of marking half-rebuilt boards complete; a rebuild that loses its lock
swaps nothing in; two rebuilds of a game run one after the other.
"""

import random
import time
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from boards import keys
from boards.epoch import epoch_confirm, epoch_forget, epoch_get
from common.locks import LockLost, lock_held
from common.metrics import counters
from common.redis import client as redis_client
from common.testing import run_together, start_beat, start_worker, stop
from scoring import rebuild
from scoring.players import player_update
from scoring.rebuild import boards_rebuild
from scoring.reconcile import boards_reconcile
from scoring.recovery import boards_recover_if_lost
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct, unapplied
from scoring.tests.test_worker_integration import make_matches, submit, wait_drained
from seasons.models import Game


def wait_for(condition, timeout: float, what: str) -> float:
    """Seconds until `condition()` held (polled every 20 ms); fails after `timeout`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.02)
    return time.monotonic() - started


@pytest.mark.serial
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)
def test_flushall_under_a_running_service_rebuilds_every_board_alone():
    rng = random.Random(3)
    start = timezone.now() - timedelta(days=5)
    games = [make_game("load", start=start), make_game("small", tie_rule="dense", start=start)]
    keys_of = {game.slug: make_key(game) for game in games}
    redis = redis_client()
    beat = start_beat()
    worker = start_worker()
    try:
        submit(games[0], keys_of["load"], make_matches(rng, 3000, timezone.now() - timedelta(days=4)))
        submit(games[1], keys_of["small"], make_matches(rng, 300, timezone.now() - timedelta(days=4)))
        player_update(game=games[0], player_id="p1", display_name="Ada")
        player_update(game=games[0], player_id="p2", hidden=True)
        wait_drained()
        wait_for(lambda: epoch_get() is not None, 30, "the first check writes the marker")
        for game in games:
            assert boards_diff(game=game, now=timezone.now()) == {}
        names = redis.hgetall(keys.names_key("load"))
        assert names["p1"] == "Ada"
        assert redis.smembers(keys.hidden_key("load")) == {"p2"}

        redis.flushall()
        flushed = time.monotonic()
        # Results keep arriving while the boards are gone: the worker puts them on the empty boards,
        # and the rebuild must still count each of them once.
        during = make_matches(rng, 100, timezone.now() - timedelta(days=1))
        submit(games[0], keys_of["load"], during)
        wait_for(lambda: epoch_get() is not None, 60, "the recovery writes the marker again")
        recovered_s = time.monotonic() - flushed
        wait_drained(60)
        for game in games:
            assert boards_diff(game=game, now=timezone.now()) == {}, game.slug
        assert redis.hgetall(keys.names_key("load")) == names
        assert redis.smembers(keys.hidden_key("load")) == {"p2"}
        assert counters()["boards_recoveries"] == 1
        print(f"\nFLUSHALL to every board complete: {recovered_s:.2f} s")

        # New results still reach the boards (no process restarted); a reconciliation while the
        # worker applies them finds no drift (results on their way are not drift).
        submit(games[0], keys_of["load"], make_matches(rng, 200, timezone.now() - timedelta(hours=2)))
        clock = time.monotonic()
        full = boards_reconcile(game=games[0], full=True)
        full_s = time.monotonic() - clock
        clock = time.monotonic()
        sample = boards_reconcile(game=games[0])
        sample_s = time.monotonic() - clock
        assert (full.drift, sample.drift) == (0, 0), (full, sample)
        wait_drained(60)
        assert boards_diff(game=games[0], now=timezone.now()) == {}
        assert counters()["boards_recoveries"] == 1  # the marker stayed: no second rebuild
        print(
            f"reconcile of {full.entries} entries on {full.boards} boards: full {full_s:.2f} s; "
            f"sample of {sample.players} players ({sample.entries} entries): {sample_s:.2f} s"
        )
    finally:
        stop(worker)
        stop(beat)


def seed(game: Game, results: int = 40) -> None:
    key = make_key(game)
    rng = random.Random(1)
    for i in range(results):
        body = match_body([{"player_id": f"p{rng.randint(0, 15)}", "points": rng.randint(0, 50), "region": "eu"}])
        submit_direct(game, key, body, now=timezone.now() - timedelta(minutes=results - i))
    drain()


@pytest.mark.django_db
def test_the_check_writes_the_marker_once_and_rebuilds_when_it_is_gone():
    game = make_game(start=timezone.now() - timedelta(days=2))
    assert boards_recover_if_lost() is not None  # a fresh Redis and an empty ledger: the first start
    assert epoch_get() is not None
    assert "boards_recoveries" not in counters()  # nothing was lost
    assert boards_recover_if_lost() is None  # the marker is there: nothing to do

    seed(game)
    redis_client().flushall()
    report = boards_recover_if_lost()
    assert report is not None and report.data_lost and report.games == [game.slug] and report.marker
    assert epoch_get() == report.marker
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert counters()["boards_recoveries"] == 1


@pytest.mark.django_db
def test_the_marker_is_written_only_while_the_recovery_holds_its_lock():
    with lock_held(keys.recover_lock_key()) as lock:
        assert lock is not None
        redis_client().flushall()  # Redis lost its data during the recovery: the lock went too
        assert not epoch_confirm(lock_token=lock.token, value="x")
        assert epoch_get() is None
        with pytest.raises(LockLost):
            lock.check()
    with lock_held(keys.recover_lock_key()) as lock:
        assert lock is not None
        with lock_held(keys.recover_lock_key()) as second:
            assert second is None  # one recovery at a time
        assert epoch_confirm(lock_token=lock.token, value="x")
    assert epoch_get() == "x"
    epoch_forget()
    assert epoch_get() is None


@pytest.mark.django_db
def test_a_rebuild_that_loses_its_lock_marks_and_swaps_nothing(monkeypatch):
    game = make_game(start=timezone.now() - timedelta(days=2))
    seed(game)
    key = make_key(game)
    submit_direct(game, key, match_body([{"player_id": "late", "points": 9}]), now=timezone.now())  # not applied
    redis = redis_client()
    versions = {k: redis.get(k) for k in redis.scan_iter(keys.board_pattern(game.slug)) if k.endswith(":v")}
    assert versions
    original_patch = rebuild.board_stage_patch

    def patch_then_lose_the_lock(**kwargs):
        original_patch(**kwargs)
        redis.delete(keys.rebuild_lock_key(game.slug))  # as a FLUSHALL would, just before the swap

    monkeypatch.setattr(rebuild, "board_stage_patch", patch_then_lose_the_lock)
    with pytest.raises(LockLost):
        boards_rebuild(game=game)
    assert {k: redis.get(k) for k in versions} == versions  # no board was swapped
    assert unapplied().filter(player_id="late").exists()  # nor marked applied (still in the outbox)
    assert not redis.exists(keys.pause_key(game.slug))  # the applies are not left paused
    drain()
    assert boards_diff(game=game, now=timezone.now()) == {}


@pytest.mark.django_db
def test_a_rebuild_whose_applied_flags_fail_after_the_swap_counts_each_result_once(monkeypatch):
    game = make_game(start=timezone.now() - timedelta(days=2))
    seed(game)
    key = make_key(game)
    for i in range(3):  # accepted, not applied: the rebuilt boards take them in
        submit_direct(game, key, match_body([{"player_id": f"p{i}", "points": 7}]), now=timezone.now())

    def ledger_gone(event_ids):
        raise OperationalError("PostgreSQL went away")

    monkeypatch.setattr(rebuild, "_flag_applied", ledger_gone)
    with pytest.raises(OperationalError):
        boards_rebuild(game=game)
    assert unapplied().count() == 3
    assert boards_diff(game=game, now=timezone.now()) == {}  # swapped in, with the three results
    drain()  # the worker finds them in the outbox: skipped for their markers, and taken out
    assert unapplied().count() == 0
    assert boards_diff(game=game, now=timezone.now()) == {}


@pytest.mark.django_db(transaction=True)
def test_two_rebuilds_of_a_game_run_one_after_the_other():
    game = make_game(start=timezone.now() - timedelta(days=2))
    seed(game, results=200)
    inside: list[int] = []
    overlaps: list[int] = []
    original = rebuild._rebuild

    def counted(**kwargs):
        inside.append(1)
        if len(inside) > 1:
            overlaps.append(1)
        try:
            time.sleep(0.3)
            return original(**kwargs)
        finally:
            inside.pop()

    rebuild._rebuild = counted
    try:
        run_together(lambda i: boards_rebuild(game=Game.objects.get(pk=game.pk)), 2)
    finally:
        rebuild._rebuild = original
    assert overlaps == []
    assert boards_diff(game=game, now=timezone.now()) == {}


@pytest.mark.django_db
def test_realign_after_a_restore_drops_this_deployments_keys_and_rebuilds_from_the_ledger():
    """`realign_redis` (docs/operations.md, "Backing up and restoring PostgreSQL"): boards holding
    results the restored ledger does not have, markers and queued tasks of the old ledger, a game
    the backup predates; all gone, the boards rebuilt from the ledger; the metrics and another
    deployment's keys on the same Redis untouched."""
    from common.metrics import count
    from common.redis import broker_key
    from scoring.recovery import redis_realign

    game = make_game(start=timezone.now() - timedelta(days=2))
    key = make_key(game)
    for n in range(20):
        submit_direct(game, key, match_body([{"player_id": f"p{n % 7}", "points": n}]), now=timezone.now())
    drain()
    boards_recover_if_lost()
    redis = redis_client()
    season_board = keys.BoardRef(game.slug, game.seasons.get().id, "all").key
    redis.zadd(season_board, {"dropped-by-the-restore": 10**9})  # a result only the old ledger had
    redis.hset(*keys.dedup_location(10**6), "12345")  # a marker of the old ledger
    redis.zadd(keys.BoardRef("newer-game", 99, "all").key, {"x": 1})  # a game created after the backup
    redis.rpush(broker_key("scoring"), "an apply task of the old ledger")
    count("refused:no_open_season:arena")
    redis.set("staging-deployment:b:arena:1:all:global:-", "theirs")
    assert boards_diff(game=game, now=timezone.now())

    report = redis_realign()

    assert report.keys_dropped > 0  # the queue too: the broker is this Redis here
    assert report.recovery is not None and report.recovery.games == [game.slug] and report.recovery.marker
    assert report.ledger_events == 20
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert epoch_get() == report.recovery.marker
    assert not redis.exists(keys.BoardRef("newer-game", 99, "all").key, broker_key("scoring"))
    assert redis.hget(*keys.dedup_location(10**6)) is None
    assert counters()["refused:no_open_season:arena"] == 1  # the metrics stay
    assert redis.get("staging-deployment:b:arena:1:all:global:-") == "theirs"
