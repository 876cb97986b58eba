"""Shared bits of the season-sized job benchmarks (freeze.py, rebuild.py): a fresh game whose
ledger holds N players' accepted results, written straight into PostgreSQL by COPY (no HTTP: these
measure the jobs, not ingest), the job's peak memory, and the clean-up of everything a run wrote.

Needs Django set up (the callers do it before importing this module).
"""

import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

from django.db import connection, transaction
from django.utils import timezone

from boards import keys
from boards.models import FrozenStanding, Player
from common.db import copy_rows
from common.redis import client
from scoring.ledger_partitions import partitions_ensure_between
from scoring.models import ScoreEvent, SeasonTotal, UnappliedEvent
from seasons.keys import catalog_key, catalog_version_key
from seasons.models import Game, Season, SeasonPointer, SeasonPointerChange
from seasons.periods import week_label
from seasons.services import game_create

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 50_000
COLUMNS = ["game_id", "season_id", "match_id", "player_id", "points", "played_at", "accepted_at"]
COLUMNS += ["duration_s", "day", "week", "region", "extra_boards", "status", "reason"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ledger_seed(*, label: str, players: int, tie_rule: str = "competition") -> tuple[Game, Season]:
    """A fresh game `<label>-<random>` whose season holds one applied result per player, region
    `eu`: 10 boards (all, daily, weekly, monthly, best; global and eu) of `players` members each."""
    now = timezone.now()
    game, season = game_create(
        slug=f"{label}-{uuid.uuid4().hex[:6]}",
        name=f"{label} bench",
        tie_rule=tie_rule,
        season_start=now - timedelta(days=2),
    )
    played = now - timedelta(hours=1)
    partitions_ensure_between(played, now)
    tail = (600, played.date(), week_label(played), "eu", "[]", "accepted", "")  # applied: no outbox row
    started = time.perf_counter()
    for start in range(0, players, CHUNK):
        n = min(CHUNK, players - start)
        copy_rows(
            ScoreEvent._meta.db_table,
            COLUMNS,
            (
                (
                    game.id,
                    season.id,
                    uuid.uuid4(),
                    f"p{start + i:07d}",
                    (start + i) * 7919 % 100_000,
                    played,
                    # Accept times spread over the last hour: the "reached" part of scores varies.
                    now - timedelta(seconds=(start + i) * 7 % 3600),
                    *tail,
                )
                for i in range(n)
            ),
        )
    log(f"ledger: {players} events of game {game.slug} written in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    with connection.cursor() as cursor:  # as a season's ledger is by its end: vacuumed, analyzed
        cursor.execute(f"VACUUM (ANALYZE) {ScoreEvent._meta.db_table}")
    log(f"ledger: vacuumed in {time.perf_counter() - started:.1f} s")
    return game, season


def bench_cleanup(*, game: Game) -> None:
    """Delete what a run wrote for its game: ledger rows, standings, players, the game itself, and
    its Redis keys."""
    redis = client()
    found = list(redis.scan_iter(match=keys.board_pattern(game.slug), count=10_000))
    for start in range(0, len(found), 1000):
        redis.unlink(*found[start : start + 1000])
    redis.unlink(
        keys.names_key(game.slug),
        keys.names_version_key(game.slug),
        keys.hidden_key(game.slug),
        catalog_key(game.slug),
        catalog_version_key(game.slug),
    )
    with transaction.atomic():
        seasons = list(game.seasons.values_list("id", flat=True))
        FrozenStanding.objects.filter(season_id__in=seasons).delete()
        UnappliedEvent.objects.filter(event__game=game).delete()
        ScoreEvent.objects.filter(game=game).delete()
        SeasonTotal.objects.filter(season_id__in=seasons).delete()
        Player.objects.filter(game=game).delete()
        SeasonPointerChange.objects.filter(game=game).delete()
        SeasonPointer.objects.filter(game=game).delete()
        Season.objects.filter(game=game).delete()
        game.delete()
    log(f"cleaned up game {game.slug}")


def measured_run(command: list[str]) -> tuple[float, float, str]:
    """Run a command in a process of its own, from the project's root: (wall seconds, its peak RSS
    in MB, its stdout). The peak is the child's own (wait4), not this process's."""
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{err.read()}")
        return elapsed, usage.ru_maxrss / 1024, out.read()
