"""Freeze time and export size for a large season (issue 3): N players, one result each.

    .venv/bin/python bench/freeze.py --players 1000000

Writes the ledger rows straight into PostgreSQL (no HTTP: this measures freezing, not ingest),
then times `season_freeze` (standings of every board into PostgreSQL) and the CSV/JSON export.
Prints: `freeze: 1000000 players, 10 boards, 5000000 rows in 95.1 s, csv 180 MB, json 420 MB`.
"""

import argparse
import os
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

from common.db import copy_rows  # noqa: E402
from scoring.freezing import season_freeze  # noqa: E402
from scoring.models import ScoreEvent  # noqa: E402
from seasons.periods import week_label  # noqa: E402
from seasons.services import game_create  # noqa: E402

CHUNK = 50_000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    args = parser.parse_args()
    now = timezone.now()
    game, season = game_create(
        slug=f"freeze-{uuid.uuid4().hex[:6]}", name="Freeze bench", season_start=now - timedelta(days=2)
    )
    played = now - timedelta(hours=1)
    started = time.perf_counter()
    for start in range(0, args.players, CHUNK):
        n = min(CHUNK, args.players - start)
        columns = ["game_id", "season_id", "match_id", "player_id", "points", "played_at", "accepted_at"]
        columns += ["duration_s", "day", "week", "region", "status", "reason", "applied_at"]
        tail = (600, played.date(), week_label(played), "eu", "accepted", "", now)
        copy_rows(
            ScoreEvent._meta.db_table,
            columns,
            (
                (
                    game.id,
                    season.id,
                    uuid.uuid4(),
                    f"p{start + i:07d}",
                    (start + i) * 7919 % 100_000,
                    played,
                    now,
                    *tail,
                )
                for i in range(n)
            ),
        )
    print(f"ledger: {args.players} events written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    started = time.perf_counter()
    rows = season_freeze(season_id=season.id, now=timezone.now())
    freeze_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        call_command("export_standings", str(season.id), "--dir", folder, stdout=open(os.devnull, "w"))
        export_s = time.perf_counter() - started
        sizes = {p.suffix: p.stat().st_size for p in Path(folder).iterdir()}
    boards = season.standings.values("board", "region", "period").distinct().count()
    print(
        f"freeze: {args.players} players, {boards} boards, {rows} rows in {freeze_s:.1f} s, "
        f"export {export_s:.1f} s, csv {sizes['.csv'] / 1e6:.0f} MB, json {sizes['.json'] / 1e6:.0f} MB"
    )


if __name__ == "__main__":
    main()
