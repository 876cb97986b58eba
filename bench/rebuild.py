"""Rebuild time and peak memory for a large season: N players, one result each.

    flock /tmp/bench.lock .venv/bin/python bench/rebuild.py --players 1000000

Writes the ledger rows straight into PostgreSQL (no HTTP: this measures the rebuild, not ingest),
then times `manage.py rebuild_boards <game>` as an operator runs it, each run a process of its own
(its peak RSS is the rebuild's own): the `all` boards alone (`--board all`) onto empty Redis, every
board, then `--board all` again over the live boards the runs before left (the swap replaces a
1M-member board). Deletes the game's rows and keys at the end. Prints one line per run:
`rebuild --board all (empty Redis): 1000000 players (competition), 2 boards, 2000000 members in 9.1 s, peak RSS 140 MB`.
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")

import django

django.setup()

from _ledger import bench_cleanup, ledger_seed, log, measured_run  # noqa: E402

RUNS = [
    ("--board all (empty Redis)", ["--board", "all"]),
    ("every board", []),
    ("--board all (over live boards)", ["--board", "all"]),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--tie-rule", default="competition", choices=["competition", "dense", "first"])
    args = parser.parse_args()
    log("rebuild bench: seeding the ledger")
    game, _ = ledger_seed(label="rebuild", players=args.players, tie_rule=args.tie_rule)
    try:
        for label, options in RUNS:
            command = [sys.executable, "manage.py", "rebuild_boards", game.slug, "--quiet", *options]
            elapsed, peak_mb, out = measured_run(command)
            report = json.loads(out.strip().splitlines()[-1])
            print(
                f"rebuild {label}: {args.players} players ({args.tie_rule}), {report['boards']} boards, "
                f"{report['members']} members in {elapsed:.1f} s, peak RSS {peak_mb:.0f} MB",
                flush=True,
            )
    finally:
        bench_cleanup(game=game)


if __name__ == "__main__":
    main()
