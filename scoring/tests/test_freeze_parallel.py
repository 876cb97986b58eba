"""The freeze on connections of its own (`standings_load` with LOAD_CONNECTIONS): the standings equal
the Python path's, and a failure, a crash's leftover, a hash collision or no spare connection
leaves the season freezable. Transactional tests: the helper connections see only committed rows."""

import time

import pytest
from django.db import connection, transaction
from django.utils import timezone

from boards import standings
from boards.codec import ScoreOverflow
from boards.models import FrozenStanding
from scoring.freezing import season_freeze
from scoring.tests.test_freezing import (
    COLUMNS,
    attached,
    overflowing_season,
    parent_indexes,
    python_standings,
    seeded_season,
)
from scoring.tests.test_rebuild import dimension_game, seed

pytestmark = pytest.mark.django_db(transaction=True)
TABLE = FrozenStanding._meta.db_table


def exists(name):
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


@pytest.mark.parametrize(
    ("rule", "ascending"), [("competition", False), ("dense", False), ("first", False), ("dense", True)]
)
def test_parallel_equals_python(rule, ascending, caplog):
    caplog.set_level("INFO", logger="boards.standings")
    season, expected = seeded_season(rule, ascending)
    assert not connection.in_atomic_block
    assert season_freeze(season_id=season.id, now=timezone.now()) == len(expected)
    assert sorted(FrozenStanding.objects.filter(season=season).values_list(*COLUMNS)) == expected
    assert "ranked on 3 connections" in caplog.text, caplog.text
    assert attached(season) == [f"{TABLE}_s{season.id}"]
    assert not exists(f"{TABLE}_s{season.id}_load")
    part = f"{TABLE}_s{season.id}"
    assert parent_indexes(part) == ["boards_frozenstanding_pkey", "standing_player", "standing_unique_position"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'c'", [part])
        assert cursor.fetchone()[0] == 2  # position, rank checks; the season's check dropped
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [part])
        assert cursor.fetchone()[0] == len(expected)  # analyzed
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, board, region, period, position FROM {part} ORDER BY ctid")
        heap = cursor.fetchall()
    assert [r[0] for r in heap] == sorted(r[0] for r in heap)
    keys = [(r[1].encode(), r[2].encode(), r[3].encode(), r[4]) for r in heap]
    assert keys == sorted(keys)
    assert len({k[:3] for k in keys}) > 20
    season.refresh_from_db()
    assert season.frozen_at is not None
    assert season_freeze(season_id=season.id, now=timezone.now()) == 0


def test_parallel_overflow_leaves_nothing():
    season = overflowing_season()
    with pytest.raises(ScoreOverflow, match="a on the "):
        season_freeze(season_id=season.id, now=timezone.now())
    season.refresh_from_db()
    assert season.frozen_at is None
    assert attached(season) == []
    assert not exists(f"{TABLE}_s{season.id}_load")
    assert not exists(f"{TABLE}_s{season.id}")


def test_leftover_is_dropped_and_rerun_succeeds():
    game = dimension_game()
    seed(game, matches=10)
    season = game.seasons.get()
    stage = f"{TABLE}_s{season.id}_load"
    with connection.cursor() as cursor:  # what a crashed freeze leaves: committed, half loaded, one index
        cursor.execute(f"CREATE TABLE {stage} (LIKE {TABLE} INCLUDING DEFAULTS)")
        cursor.execute(
            f"INSERT INTO {stage} (season_id, board, region, period, position, rank, player_id, score) "
            f"VALUES ({season.id}, 'all', 'global', '-', 0, 1, 'zz', 5)"
        )
        cursor.execute(f"CREATE INDEX {TABLE}_s{season.id}_player ON {stage} (player_id)")
    rows = season_freeze(season_id=season.id, now=timezone.now())
    assert rows > 0
    assert FrozenStanding.objects.filter(season=season).count() == rows
    assert not FrozenStanding.objects.filter(season=season, player_id="zz").exists()
    assert not exists(stage)


def test_a_failure_while_attaching_drops_the_table_and_a_rerun_succeeds(monkeypatch):
    game = dimension_game()
    seed(game, matches=10)
    season = game.seasons.get()
    original = standings._attach_sql
    monkeypatch.setattr(standings, "_attach_sql", lambda **kw: [*original(**kw)[:3], "SELECT 1/0"])
    with pytest.raises(Exception, match="division by zero"):
        season_freeze(season_id=season.id, now=timezone.now())
    season.refresh_from_db()
    assert season.frozen_at is None
    assert attached(season) == []
    assert not exists(f"{TABLE}_s{season.id}_load") and not exists(f"{TABLE}_s{season.id}")
    monkeypatch.setattr(standings, "_attach_sql", original)
    assert season_freeze(season_id=season.id, now=timezone.now()) > 0
    assert attached(season) == [f"{TABLE}_s{season.id}"]


def test_a_failure_on_a_helper_cancels_the_others(monkeypatch):
    game = dimension_game()
    seed(game, matches=10)
    season = game.seasons.get()
    original = standings._rank_task

    def task(**kw):
        if kw["number"] == 0:
            return lambda cursor: cursor.execute("SELECT pg_sleep(30)")
        if kw["number"] == 2:
            return lambda cursor: cursor.execute("SELECT 1/0")
        return original(**kw)  # 1 waits for 0's turn, then is stopped

    monkeypatch.setattr(standings, "_rank_task", task)
    started = time.perf_counter()
    with pytest.raises(Exception, match="division by zero"):
        season_freeze(season_id=season.id, now=timezone.now())
    assert time.perf_counter() - started < 10
    assert not exists(f"{TABLE}_s{season.id}_load")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")
        assert cursor.fetchone()[0] == 0
    season.refresh_from_db()
    assert season.frozen_at is None


@pytest.mark.parametrize("outer", [False, True])
def test_a_hash_collision_ranks_by_the_strings(monkeypatch, outer, caplog):
    monkeypatch.setattr(standings, "BOARD_HASH", "0::bigint")  # every board shares one partition
    game = dimension_game(tie_rule="dense", max_points=100_000)
    seed(game)
    season = game.seasons.get()
    expected = python_standings(season)
    if outer:
        with transaction.atomic():
            rows = season_freeze(season_id=season.id, now=timezone.now())
    else:
        rows = season_freeze(season_id=season.id, now=timezone.now())
    assert rows == len(expected)
    assert sorted(FrozenStanding.objects.filter(season=season).values_list(*COLUMNS)) == expected
    assert caplog.text.count("share a hash") == 5


def test_no_connections_of_its_own_loads_on_one(monkeypatch, caplog):
    import psycopg

    def refuse(*args, **kwargs):
        raise psycopg.OperationalError("too many clients already")

    monkeypatch.setattr(psycopg, "connect", refuse)
    game = dimension_game()
    seed(game, matches=10)
    season = game.seasons.get()
    rows = season_freeze(season_id=season.id, now=timezone.now())
    assert rows > 0 and FrozenStanding.objects.filter(season=season).count() == rows
    assert attached(season) == [f"{TABLE}_s{season.id}"]
    assert "no connections of its own" in caplog.text
