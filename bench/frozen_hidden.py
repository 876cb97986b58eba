"""Frozen reads on a large board with players hidden after the freeze: what leaving them out of
the answers and out of everyone's rank (boards/gone.py) costs a top and an around read.

    flock /tmp/bench.lock .venv/bin/python bench/frozen_hidden.py --players 1000000 --hidden 0,100,1000,10000

Writes one frozen board of N players straight into the standings (pairs of players tie, ranked
by the game's rule), then, for each count of hidden players (spread evenly down the board),
times the top 100, the 11 around a player in the middle, a player's standing and their own rank,
each the median of `--repeat` calls in this process. `--old PATH` times the selectors module at
PATH too (e.g. `git show <commit>:boards/selectors.py > /tmp/old.py`: the reads before the fix,
which leave nobody out). Deletes its game, season, players and standings at the end.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings.base")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from boards import selectors  # noqa: E402
from boards.keys import GLOBAL  # noqa: E402
from boards.kinds import NO_PERIOD  # noqa: E402
from boards.models import FrozenStanding, Player  # noqa: E402
from seasons.models import Game, Season  # noqa: E402

SLUG = "bench-frozen-hidden"


def setup(players: int, rule: str) -> Season:
    game = Game.objects.create(slug=SLUG, name=SLUG, tie_rule=rule)
    now = timezone.now()
    season = Season.objects.create(
        game=game, name="s", starts_at=now - timedelta(days=30), ends_at=now - timedelta(days=1), time_bits=20
    )
    rank = {"competition": "2 * (i / 2) + 1", "dense": "i / 2 + 1", "first": "i + 1"}[rule]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {FrozenStanding._meta.db_table} "
            "(season_id, board, region, period, position, rank, player_id, score) "
            f"SELECT %s, 'all', %s, %s, i, {rank}, 'p' || i, %s - i / 2 FROM generate_series(0, %s - 1) AS i",
            [season.id, GLOBAL, NO_PERIOD, players, players],
        )
        cursor.execute(f"ANALYZE {FrozenStanding._meta.db_table}")
    Season.objects.filter(id=season.id).update(frozen_at=now)
    return Season.objects.select_related("game").get(id=season.id)


def hide(season: Season, players: int, hidden: int) -> None:
    Player.objects.filter(game=season.game).delete()
    if hidden:
        step = players // hidden
        Player.objects.bulk_create(
            [Player(game=season.game, player_id=f"p{i * step + 1}", hidden=True) for i in range(hidden)],
            batch_size=5000,
        )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Player._meta.db_table}")


def median_ms(call: Callable[[], Any], repeat: int) -> float:
    call()
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        took.append(time.perf_counter() - started)
    return statistics.median(took) * 1000


def measure(module: ModuleType, season: Season, players: int, repeat: int) -> str:
    view = module.BoardView(game=season.game, season=season, board="all", region=GLOBAL, period=None)
    middle = f"p{players // 2}"
    reads = {
        "top 100": lambda: module.board_top(view=view, n=100),
        "around r=5": lambda: module.board_around(view=view, player_id=middle, r=5),
        "player": lambda: module.board_player(view=view, player_id=middle),
        "own rank": lambda: module.frozen_own_rank(view=view, player_id=middle),
    }
    return ", ".join(f"{name} {median_ms(read, repeat):.2f} ms" for name, read in reads.items())


def old_module(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("boards._selectors_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cleanup() -> None:
    for game in Game.objects.filter(slug=SLUG):
        FrozenStanding.objects.filter(season__game=game).delete()
        Player.objects.filter(game=game).delete()
        Season.objects.filter(game=game).delete()
        game.delete()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--hidden", default="0,100,1000,10000")
    parser.add_argument("--rule", default="competition", choices=["competition", "dense", "first"])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--old", default="")
    args = parser.parse_args()
    cleanup()
    try:
        started = time.perf_counter()
        season = setup(args.players, args.rule)
        print(f"{args.players} standings ({args.rule}) written in {time.perf_counter() - started:.1f} s", flush=True)
        before = old_module(args.old) if args.old else None
        for hidden in [int(h) for h in args.hidden.split(",")]:
            hide(season, args.players, hidden)
            if before is not None:
                print(f"before, {hidden} hidden: {measure(before, season, args.players, args.repeat)}", flush=True)
            print(f"after,  {hidden} hidden: {measure(selectors, season, args.players, args.repeat)}", flush=True)
    finally:
        cleanup()


if __name__ == "__main__":
    main()
