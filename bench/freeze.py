"""Freeze time, peak memory and export size for a large season (issues 3 and 10): N players, one
result each.

    flock /tmp/bench.lock .venv/bin/python bench/freeze.py --players 1000000

Writes the ledger rows straight into PostgreSQL (no HTTP: this measures freezing, not ingest),
then times `season_freeze` (the standings of every board, ranked inside PostgreSQL into the
season's partition) in a process of its own, whose peak RSS is the freeze's own (PostgreSQL's
backends are not in it, the three the freeze opens beside its own neither), and the CSV/JSON export. Logs the freeze's
phases (each kind's ranking and copy, the five together, each index, the attachment). Drops the
season's partition (and the `_load` table a failed freeze leaves) and deletes the game's rows
(events) and keys at the end. Prints, with `--no-export` (2 cores, 2026-12-01; the same code that
took 91.7 s on the machine of the previous round took 259.9 s on this one):
`freeze: 1000000 players (competition), 10 boards, 10000000 rows in 170.8 s, peak RSS 106 MB`
(158.7 s in a second run).
"""

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")

import django

django.setup()

from _ledger import bench_cleanup, ledger_seed, log, measured_run  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from boards.models import FrozenStanding  # noqa: E402
from scoring.freezing import season_freeze  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--tie-rule", default="competition", choices=["competition", "dense", "first"])
    parser.add_argument("--no-export", action="store_true", help="skip the CSV/JSON export")
    parser.add_argument("--freeze-season", type=int, help=argparse.SUPPRESS)  # the measured child
    args = parser.parse_args()
    if args.freeze_season is not None:
        phases = _Phases()
        logging.getLogger("boards.standings").addHandler(phases)
        logging.getLogger("boards.standings").setLevel(logging.INFO)
        rows = season_freeze(season_id=args.freeze_season, now=timezone.now())
        print(json.dumps({"rows": rows, "phases": phases.lines}))
        return
    log("freeze bench: seeding the ledger")
    game, season = ledger_seed(label="freeze", players=args.players, tie_rule=args.tie_rule)
    try:
        command = [sys.executable, str(Path(__file__).resolve()), "--freeze-season", str(season.id)]
        freeze_s, peak_mb, out = measured_run(command)
        report = json.loads(out.strip().splitlines()[-1])
        rows = report["rows"]
        for phase in report.get("phases", []):
            log(f"  {phase}")
        boards = season.standings.values("board", "region", "period").distinct().count()
        line = (
            f"freeze: {args.players} players ({args.tie_rule}), {boards} boards, {rows} rows in {freeze_s:.1f} s, "
            f"peak RSS {peak_mb:.0f} MB"
        )
        if not args.no_export:
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                call_command("export_standings", str(season.id), "--dir", folder, stdout=open(os.devnull, "w"))
                export_s = time.perf_counter() - started
                sizes = {p.suffix: p.stat().st_size for p in Path(folder).iterdir()}
            line += f", export {export_s:.1f} s, csv {sizes['.csv'] / 1e6:.0f} MB, json {sizes['.json'] / 1e6:.0f} MB"
        print(line, flush=True)
    finally:
        with connection.cursor() as cursor:  # the season's partition: dropped at once, not 10M rows deleted
            part = f"{FrozenStanding._meta.db_table}_s{int(season.id)}"
            cursor.execute(f"DROP TABLE IF EXISTS {part}, {part}_load")  # and what a failed freeze left
        bench_cleanup(game=game)


class _Phases(logging.Handler):
    """The freeze's phases as `boards.standings` logs them (the child runs at LOG_LEVEL=WARNING)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


if __name__ == "__main__":
    main()
